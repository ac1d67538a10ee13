"""The run's own duties, as callbacks on the hooks users get (Lightning's way: its checkpoint,
progress bar and learning-rate monitor are callbacks too).

A `Duty` is a `Callback` (api/callback.py) that the trainer calls before the users' callbacks
on every hook, and that also sees what the iteration handed back (`on_played`: its matches,
voided ones included). Each is handed, when it is made, the parts it works with (the run
folder, the display, the run's state), never the trainer. `TrainResult` is what the duties
fill in for the run to return: the metrics rows and the closing evaluation.
The trainer calls them in the order core/run/duties/roster.py lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from selfplay.api.callback import Callback

if TYPE_CHECKING:
    from selfplay.api.run_view import RunView
    from selfplay.core.evaluate import EvalResult
    from selfplay.core.run.folder.run_folder import RunFolder
    from selfplay.core.train.loop import Played


class Duty(Callback):
    """A duty of the run itself: a callback that is also handed each iteration's `Played`."""

    name = "duty"

    def __init__(self) -> None:  # a duty's options are its constructor's arguments
        pass

    def on_played(self, view: RunView, played: Played) -> None:
        """What the iteration handed back: its metrics row and every process's matches, the
        voided ones included; before any callback's ``on_iteration_metrics``."""


@dataclass
class TrainResult:
    """What a run returns (``train``), filled in by its duties; callbacks' ``on_train_end``
    gets it."""

    folder: RunFolder | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    before: dict[str, EvalResult] = field(default_factory=dict)
    after: dict[str, EvalResult] = field(default_factory=dict)
    tasks_before: dict[str, float] = field(default_factory=dict)
    tasks_after: dict[str, float] = field(default_factory=dict)
