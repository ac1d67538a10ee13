"""The duties that keep what the run trained: the weight average's hand-over and checkpoints.

At the last iteration (its count, or the time limit, reached: ``view.last``) each learner that
keeps a weight average (``train.weight_average``, core/train/averaging.py) takes the average
as its weights, so the checkpoint, the closing evaluation and an export all hold it. A
checkpoint is written every ``checkpoint_every`` iterations and at the last one
(core/run/resume.py); every process takes part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfplay.api.run_view import RunView
from selfplay.core.run import resume
from selfplay.core.run.duties.duty import Duty
from selfplay.core.run.run_folder import RunFolder
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
        every = self.state.config.checkpoint_every
        if view.last or view.iteration % every == 0:
            resume.save(self.state, self.fabric, self.shared, self.folder, view.iteration)
