"""What a run shows in the terminal: a progress bar while it runs, tables when it ends.

On a terminal a long step (the training iterations, the cold start) shows a bar with an ETA;
when the output is not a terminal (a log file, a batch job) it prints a plain line instead,
at most every ``SELFPLAY_PROGRESS_EVERY`` seconds (30 by default), and one at the end.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

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
            self.bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
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


class RunDisplay:
    """Only the main process shows anything (``enabled``); the others stay quiet."""

    def __init__(
        self, config: Any, folder: Any, console: Console | None = None, enabled: bool = True
    ) -> None:
        self.config, self.folder, self.enabled = config, folder, enabled
        self.console = console or Console(stderr=True)
        self.last_eval = ""
        self.fired: dict[str, int] = {}  # monitor column -> the first iteration it fired
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            _Remaining(),
            console=self.console,
            transient=True,
        )
        self.lines: PlainLines | None = None
        self.headed = self.closed = False

    def header(self) -> None:
        """What the run is and its recipe's settings, once: before the cold start, so that
        a user sees what will run before the longest silent step."""
        if not self.enabled or self.headed:
            return
        self.headed = True
        c = self.config
        estimator = f"estimator={c.estimator} " if _uses_advantages(c.objective) else ""
        self.console.print(
            f"[bold]selfplay run[/bold] game={c.game} model={c.model} opponent={c.opponent} "
            f"{estimator}objective={c.objective} matches={c.matches} "
            f"iterations={c.iterations} -> {self.folder.path}"
        )
        from selfplay.core.config import RunConfig
        from selfplay.core.plan.recipes import recipe_line, recipe_notes

        if getattr(c, "learners", None):
            self.console.print(escape(learners_line(c)))
        if isinstance(c, RunConfig) and (line := recipe_line(c)):
            self.console.print(escape(line))
        for note in recipe_notes(c) if isinstance(c, RunConfig) else ():
            self.console.print(f"[yellow]note:[/yellow] {escape(note)}")

    def __enter__(self) -> RunDisplay:
        if not self.enabled:
            return self
        c = self.config
        self.header()
        self.progress.start()
        done = self.config.resume and _done(self.folder)
        if self.config.resume:
            self.console.print(escape(resume_line(self.folder.path, done or 0, c.iterations)))
        # a time limit ends the run first when the iterations would take longer
        minutes = getattr(c, "minutes", None)
        deadline = time.monotonic() + 60 * minutes if minutes else None
        self.task = self.progress.add_task(
            "training", total=c.iterations, completed=done or 0, status="", deadline=deadline
        )
        if not self.console.is_terminal:
            say = lambda text: self.console.print(text, soft_wrap=True)  # noqa: E731
            self.lines = PlainLines(
                "iteration", c.iterations, say, done=done or 0, deadline=deadline
            )
        return self

    @property
    def live(self) -> bool:
        """The run's bar is on screen (between ``__enter__`` and `summary`)."""
        return self.enabled and self.progress.live.is_started

    def update(self, row: dict[str, Any]) -> None:
        if not self.enabled:
            return
        for key, value in row.items():
            if key.startswith("monitor/") and value:
                self.fired.setdefault(key, int(row.get("iteration", 0)))
        # each opponent's win and non-loss rates: against a perfect player only the second moves
        # (eval/OPPONENT/..., or eval/LEARNER/OPPONENT/... with several learners)
        opponents = [
            k.removeprefix("eval/").removesuffix("/win_rate")
            for k in row
            if k.startswith("eval/") and k.endswith("/win_rate")
        ]
        if opponents:
            self.last_eval = " ".join(
                f"{o} {row[f'eval/{o}/win_rate']:.2f}/{row.get(f'eval/{o}/non_loss_rate', 0):.2f}"
                for o in opponents
            )
        status = f"reward {row['mean_reward']:+.3f}  invalid {row['invalid_rate']:.2f}"
        status += f"  {update_status(row)}"
        if self.last_eval:
            status += f"  eval win/non-loss: {self.last_eval}"
        self.progress.update(self.task, advance=1, status=status)
        if self.lines is not None:
            self.lines.advance(1, escape(status))

    def summary(
        self, before: dict, after: dict, tasks_before: dict | None = None, tasks_after=None
    ) -> None:
        if not self.enabled:
            return
        from selfplay.core.evaluate import summary_table, tasks_table

        self.progress.stop()
        if tasks_before or tasks_after:
            self.console.print(tasks_table(tasks_before or {}, tasks_after or {}))
        if before or after:
            self.console.print(summary_table(before, after))
        elif not (tasks_before or tasks_after):
            self.console.print(
                f"{self.config.game} has no scripted players or tasks to evaluate on; "
                "metrics.csv holds the rewards per role (reward/<term>/<role>)."
            )
        if hint := troubleshooting_hint(self.fired):
            self.console.print(f"[yellow]{escape(hint)}[/yellow]")

    def close(self) -> None:
        """The bar taken down and the run folder named, once (a run that stops early is
        closed by ``__exit__``)."""
        if not self.enabled or self.closed:
            return
        self.closed = True
        self.progress.stop()
        self.console.print(f"Run folder: {self.folder.path}")

    def __exit__(self, *exc: object) -> None:
        self.close()


def update_status(row: dict[str, Any]) -> str:
    """``loss L  ent E`` of the update; with several learners, each one's own columns
    (``NAME/loss``, ``NAME/entropy``): ``NAME loss L ent E``."""
    names = [k.removesuffix("/loss") for k in row if k.endswith("/loss") and k.count("/") == 1]
    if not names:
        return f"loss {row.get('loss', 0):+.4f}  ent {row.get('entropy', 0):.2f}"
    return "  ".join(
        f"{n} loss {row.get(f'{n}/loss', 0):+.4f} ent {row.get(f'{n}/entropy', 0):.2f}"
        for n in names
    )


def _uses_advantages(objective: str) -> bool:
    """Whether the objective named needs advantages, so that an estimator runs."""
    from selfplay.plugins.manager import registries

    try:
        factory = registries().objectives.get(objective)
    except Exception:  # an unknown name was refused before a run could start
        return True
    return getattr(factory, "needs", "advantages") == "advantages"


def troubleshooting_hint(fired: dict[str, int]) -> str | None:
    """The closing line when a monitor fired (None when none did)."""
    if not fired:
        return None
    what = ", ".join(f"{key} at iteration {it}" for key, it in sorted(fired.items()))
    return (
        f"A monitor fired during this run ({what}): {docs_page('troubleshooting.md')} says "
        "what each symptom means and what to change."
    )


def docs_page(name: str) -> Path:
    """The installed copy of ``docs/NAME`` (the docs ship inside the package)."""
    import selfplay

    return Path(selfplay.__file__).resolve().parent / "docs" / name


def learners_line(config: Any) -> str:
    """``learners: NAME plays ROLES with MODEL (OPTIONS), ...``: who trains what, from the
    settings (each learner's size in parameters is said as it is set up)."""
    from selfplay.core.config.learners import learner_config, learner_roles

    shown = []
    for name, settings in config.learners.items():
        own = learner_config(config, name)
        options = f" {json.dumps(own.model_options)}" if own.model_options else ""
        roles = ", ".join(learner_roles(name, settings))
        shown.append(f"{name} plays {roles} with {own.model}{options}")
    return "learners: " + "; ".join(shown)


def resume_line(folder: Any, done: int, iterations: int) -> str:
    """What a resume continues from: the iteration of its checkpoint, or the start."""
    if not done:
        return f"resuming {folder}: it wrote no checkpoint, so the run starts over"
    return f"resuming {folder} from iteration {done} (its last checkpoint), to {iterations}"


def _done(folder: Any) -> int:
    if not folder.metrics.exists():
        return 0
    rows = folder.read_metrics()
    return int(rows[-1]["iteration"]) if rows else 0


class _Remaining(TimeRemainingColumn):
    """Rich's estimate from the pace so far, capped by the task's ``deadline`` field if any."""

    def render(self, task: Any) -> Any:
        deadline = task.fields.get("deadline")
        if deadline is None or task.time_remaining is None or task.finished:
            return super().render(task)
        left = int(max(0.0, min(task.time_remaining, deadline - time.monotonic())))
        hours, rest = divmod(left, 3600)
        return Text(f"{hours}:{rest // 60:02d}:{rest % 60:02d}", style="progress.remaining")
