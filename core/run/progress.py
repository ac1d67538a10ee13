"""A long step's progress in the terminal: a bar on a terminal, plain lines elsewhere (the run's
banner, bar and closing tables: core/run/display.py).

On a terminal a long step (the training iterations, the cold start) shows a bar with an ETA;
when the output is not a terminal (a log file, a batch job) it prints a plain line instead,
at most every ``SELFPLAY_PROGRESS_EVERY`` seconds (30 by default), and one at the end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

if TYPE_CHECKING:
    from selfplay.core.run.display import RunDisplay

EVERY_VARIABLE = "SELFPLAY_PROGRESS_EVERY"


def every_seconds() -> float:
    """Seconds between two plain progress lines, from ``SELFPLAY_PROGRESS_EVERY`` (30)."""
    text = os.environ.get(EVERY_VARIABLE, "30")
    try:
        return max(0.0, float(text))
    except ValueError:
        return 30.0


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def progress_bar(console: Console, remaining: TimeRemainingColumn | None = None) -> Progress:
    """The terminal's bar: label, bar, n/total, status, time taken and time left."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        remaining or TimeRemainingColumn(),
        console=console,
        transient=True,
    )


class PlainLines:
    """Progress as a line of text every ``every`` seconds, for output that is not a terminal."""

    def __init__(
        self,
        label: str,
        total: int,
        say: Callable[[str], None],
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        done: int = 0,
        quiet: bool = False,
        deadline: float | None = None,
    ) -> None:
        self.label, self.total, self.say, self.clock = label, total, say, clock
        self.deadline = deadline  # on ``clock``: a time limit (``minutes``) caps the estimate
        self.every = every_seconds() if every is None else every
        self.done = self.first = done
        self.started = self.last = clock()
        self.quiet, self.spoke = quiet, False  # quiet: no closing line for a step that was short
        self.closed = False  # the closing line (done == total) is said once

    def advance(self, steps: int = 1, status: str = "") -> None:
        self.done += steps
        now = self.clock()
        if self.closed or (now - self.last < self.every and self.done < self.total):
            return
        if self.quiet and not self.spoke and now - self.started < self.every:
            return
        self.last, self.spoke, self.closed = now, True, self.done >= self.total
        elapsed = now - self.started
        line = f"{self.label}: {self.done}/{self.total}, {_clock(elapsed)} elapsed"
        ran = self.done - self.first
        if ran > 0 and self.done < self.total:
            left = elapsed / ran * (self.total - self.done)
            if self.deadline is not None:
                left = max(0.0, min(left, self.deadline - now))
            line += f", about {_clock(left)} left"
        self.say(f"{line}  {status}".rstrip())


class Ticker:
    """A long step's progress: a bar with an ETA on a terminal ``console``, else plain lines.

    Without a console only the plain lines go to ``say`` (a process that shows nothing passes
    a ``say`` that drops them).
    """

    def __init__(
        self,
        label: str,
        total: int,
        say: Callable[[str], None],
        console: Console | None = None,
        every: float | None = None,
        quiet: bool = False,
    ) -> None:
        self.bar: Progress | None = None
        self.lines: PlainLines | None = None
        if console is not None and console.is_terminal:
            self.bar = progress_bar(console)
            self.task = self.bar.add_task(label, total=total, status="")
        else:
            self.lines = PlainLines(label, total, say, every, quiet=quiet)

    def __enter__(self) -> Ticker:
        if self.bar is not None:
            self.bar.start()
        return self

    def advance(self, steps: int = 1, status: str = "") -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=steps, status=status)
        elif self.lines is not None:
            self.lines.advance(steps, status)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


class Phase:
    """A step inside a run that tells ``(done, total, rounds)`` as it goes (evaluations,
    held-out tasks): the ``progress`` callback of `core.rollout.play`.

    While the run's bar is live on a terminal (``display``) it shows as a second bar under it,
    removed when the step ends; otherwise as a `Ticker` of its own (a bar on a terminal
    ``console``, plain lines through ``say`` elsewhere). Nothing shows until the first call."""

    def __init__(
        self,
        label: str,
        say: Callable[[str], None],
        console: Console | None = None,
        display: RunDisplay | None = None,
        every: float | None = None,
        quiet: bool = False,
    ) -> None:
        self.label, self.say, self.console = label, say, console
        self.display, self.every = display, every
        self.quiet = quiet  # off a terminal, a step shorter than `every` prints nothing
        self.ticker: Ticker | None = None
        self.task: Any = None
        self.done = 0

    def __enter__(self) -> Phase:
        return self

    def __call__(self, done: int, total: int, rounds: int = 0) -> None:
        display = self.display
        if self.task is None and self.ticker is None:
            if display is not None and display.live and display.console.is_terminal:
                self.task = display.progress.add_task(self.label, total=total, status="")
            else:
                self.ticker = Ticker(
                    self.label, total, self.say, self.console, self.every, self.quiet
                )
                self.ticker.__enter__()
        # Matches played in lock-step mostly end together: the rounds show it is moving.
        status = f"round {rounds}" if rounds else ""
        if self.task is not None and display is not None:
            display.progress.update(self.task, completed=done, total=total, status=status)
        elif self.ticker is not None:
            self.ticker.advance(max(0, done - self.done), status)
        self.done = max(self.done, done)

    def __exit__(self, *exc: object) -> None:
        if self.task is not None and self.display is not None:
            self.display.progress.remove_task(self.task)
        if self.ticker is not None:
            self.ticker.__exit__(*exc)
