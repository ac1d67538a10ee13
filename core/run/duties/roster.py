"""The run's own duties, in the order the trainer calls them on every hook; the users'
callbacks run between the two groups, as Lightning runs its checkpoint callbacks last, so
that a checkpoint holds what a callback did at the end of its iteration:

    the episode log        episodes.jsonl, every match as it was played (records.py)
    the evaluations        before and after training, every ``eval.every``, the held-out
                           tasks (evaluations.py)
    the metrics row        elapsed time, then every tracker (records.py)
    the display            the bar, the closing table and what it says at the end (display.py)
    the weight average     handed over at the last iteration (checkpoints.py)
    -- the users' callbacks --
    checkpoints            every ``checkpoint_every``, at the last iteration, out of time,
                           and the league's tables with each (checkpoints.py)
    plots                  the run's figures at the end (display.py)
    the trackers' end      finalised once everything is written (records.py)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from selfplay.core.run.display import RunDisplay
from selfplay.core.run.duties.checkpoints import Checkpoints, LeagueTables, WeightAverageHandOver
from selfplay.core.run.duties.display import Display, Plots
from selfplay.core.run.duties.duty import Duty, TrainResult
from selfplay.core.run.duties.evaluations import Evaluations
from selfplay.core.run.duties.records import EpisodeLog, MetricsLog, TrackersEnd
from selfplay.core.run.folder.run_folder import RunFolder
from selfplay.core.run.trackers import Trackers
from selfplay.core.train.state import RunState


def run_duties(
    state: RunState,
    result: TrainResult,
    *,
    folder: RunFolder | None,
    shared: Path,
    fabric: Any,
    display: RunDisplay,
    trackers: Trackers | None,
    started: float,
    phase: Callable[..., Any],
    say: Callable[[str], None],
) -> tuple[list[Duty], list[Duty]]:
    """The duties before the users' callbacks and those after them, each handed the parts it
    works with (``folder``: process 0's run folder; ``shared``: the run folder as every
    process knows it; ``started``: when training began, ``time.perf_counter``)."""
    before: list[Duty] = [
        EpisodeLog(folder),
        Evaluations(state, phase, result),
        MetricsLog(trackers, state.progress, result, started),
        Display(display, folder, result, say),
        WeightAverageHandOver(state),
    ]
    after: list[Duty] = [
        Checkpoints(state, fabric, shared, folder),
        LeagueTables(state.league, folder, state.config.checkpoint_every),
        Plots(folder, say),
        TrackersEnd(trackers),
    ]
    return before, after
