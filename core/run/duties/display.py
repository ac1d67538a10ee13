"""The duties a person watching the run sees: the bar, the closing table, the plots.

`Display` moves the run's bar after each iteration and, at the end, prints the closing table
(the evaluation before and after training), writes it to summary.json and summary.txt, says so
when the run trained on nothing, and takes the bar down. `Plots` draws the run's figures
(plots/, with matplotlib) once the run folder is complete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.markup import escape

from selfplay.api.run_view import RunView
from selfplay.core.run.display import RunDisplay
from selfplay.core.run.duties.duty import Duty, TrainResult
from selfplay.core.run.folder.run_folder import RunFolder
from selfplay.core.run.plots import plots_at_the_end
from selfplay.core.train.checks import untrained_message


class Display(Duty):
    """The run's bar and its closing table (``result``: what the evaluations filled in)."""

    def __init__(
        self,
        display: RunDisplay,
        folder: RunFolder | None,
        result: TrainResult,
        say: Callable[[str], None],
    ) -> None:
        self.display, self.folder, self.result, self.say = display, folder, result, say

    def on_iteration_end(self, view: RunView, row: dict[str, Any]) -> None:
        self.display.update(row)

    def on_train_end(self, view: RunView, result: Any) -> None:
        done = self.result
        self.display.summary(done.before, done.after, done.tasks_before, done.tasks_after)
        if self.folder:
            self.folder.write_summary(done.before, done.after, done.tasks_before, done.tasks_after)
        if message := untrained_message(done.rows, self.folder and self.folder.path):
            self.say(f"[yellow]{escape(message)}[/yellow]")
        self.display.close()


class Plots(Duty):
    """plots/: the run's figures as PNG, drawn from the finished run folder."""

    def __init__(self, folder: RunFolder | None, say: Callable[[str], None]) -> None:
        self.folder, self.say = folder, say

    def on_train_end(self, view: RunView, result: Any) -> None:
        if self.folder:
            plots_at_the_end(self.folder.path, lambda text: self.say(escape(text)))
