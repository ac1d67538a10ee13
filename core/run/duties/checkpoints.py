"""The duties that keep what the run trained: the weight average's hand-over, checkpoints, and
the league's tables beside each checkpoint.

At the last iteration (its count, or the time limit, reached: ``view.last``) each learner that
keeps a weight average (``train.weight_average``, core/train/update/averaging.py) takes the
average as its weights, so the checkpoint, the closing evaluation and an export all hold it. A
checkpoint is written every ``checkpoint_every`` iterations and at the last one
(core/run/folder/resume.py); every process takes part. The league's tables (ratings.csv,
crossplay.csv) are written with it, so the run folder's tables are those of its newest
checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfplay.api.run_view import RunView
from selfplay.core.league.league import League
from selfplay.core.run.duties.duty import Duty
from selfplay.core.run.folder import resume
from selfplay.core.run.folder.run_folder import RunFolder
from selfplay.core.train.state import RunState


class WeightAverageHandOver(Duty):
    """The run hands over each learner's weight average at its last iteration."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def on_iteration_end(self, view: RunView, row: dict[str, Any]) -> None:
        for learner in self.state.learners if view.last else ():
            if learner.updater.average is not None:
                learner.updater.average.apply()


class Checkpoints(Duty):
    """A checkpoint every ``checkpoint_every`` iterations and at the last one, into ``shared``
    (the run folder as every process knows it; ``folder``: process 0's, None on the others)."""

    def __init__(self, state: RunState, fabric: Any, shared: Path, folder: RunFolder | None):
        self.state, self.fabric, self.shared, self.folder = state, fabric, shared, folder

    def on_iteration_end(self, view: RunView, row: dict[str, Any]) -> None:
        if checkpoint_due(view, self.state.config.checkpoint_every):
            resume.save(self.state, self.fabric, self.shared, self.folder, view.iteration)


class LeagueTables(Duty):
    """ratings.csv and crossplay.csv (process 0), whenever a checkpoint is written."""

    def __init__(self, league: League, folder: RunFolder | None, every: int) -> None:
        self.league, self.folder, self.every = league, folder, every

    def on_iteration_end(self, view: RunView, row: dict[str, Any]) -> None:
        if self.folder and checkpoint_due(view, self.every):
            self.league.write_tables(self.folder.path)


def checkpoint_due(view: RunView, every: int) -> bool:
    """Whether the run checkpoints after this iteration: every ``every``, and the last one."""
    return view.last or view.iteration % every == 0
