"""The duties that keep the run's records: the episode log and the metrics row.

`EpisodeLog` appends every match of an iteration to episodes.jsonl (voided ones as their own
lines), before anything else looks at the iteration. `MetricsLog` stamps the row with the run's
training time, hands it to every tracker (metrics.csv, TensorBoard, ...) and keeps it for the
run's result; `TrackersEnd` finalises the trackers at the end of a run, once everything else is
written.
"""

from __future__ import annotations

import time
from typing import Any

from selfplay.api.run_view import RunView
from selfplay.core.run.duties.duty import Duty, TrainResult
from selfplay.core.run.folder.run_folder import RunFolder
from selfplay.core.run.trackers import Trackers
from selfplay.core.train.loop import Played
from selfplay.core.train.metrics_row import MetricsRow
from selfplay.core.train.state import Progress


class EpisodeLog(Duty):
    """episodes.jsonl: every process's matches, as played and scored (process 0 writes)."""

    def __init__(self, folder: RunFolder | None) -> None:
        self.folder = folder

    def on_played(self, view: RunView, played: Played) -> None:
        if self.folder:
            self.folder.append_episodes([*played.episodes, *played.voided])


class MetricsLog(Duty):
    """The row's ``elapsed_seconds`` (a resumed run's earlier processes' time included), then
    the trackers; ``started`` is when this process's training began (``time.perf_counter``)."""

    def __init__(
        self,
        trackers: Trackers | None,
        progress: Progress,
        result: TrainResult,
        started: float,
    ) -> None:
        self.trackers, self.progress, self.result = trackers, progress, result
        self.started, self.earlier = started, progress.seconds

    def on_iteration_end(self, view: RunView, row: MetricsRow) -> None:  # type: ignore[override]
        self.progress.seconds = self.earlier + time.perf_counter() - self.started
        row.elapsed(self.progress.seconds)
        if self.trackers is not None:  # the main process: metrics.csv and the others
            self.trackers.log(row)
        self.result.rows.append(row)


class TrackersEnd(Duty):
    """The trackers finalised, once the run folder is complete (the last duty)."""

    def __init__(self, trackers: Trackers | None) -> None:
        self.trackers = trackers

    def on_train_end(self, view: RunView, result: Any) -> None:
        if self.trackers is not None:
            self.trackers.finalize("success")
