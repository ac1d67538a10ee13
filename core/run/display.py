"""What a run shows in the terminal around its iterations: the banner, the bar of the training
iterations, and the closing tables.

Only the main process shows anything. The banner says what the run is and its recipe's
settings, before the cold start; the bar (or, off a terminal, a plain line at most every
``SELFPLAY_PROGRESS_EVERY`` seconds: core/run/progress.py) shows each iteration's reward, loss
and latest evaluation; the closing tables compare the evaluations before and after training.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import TimeRemainingColumn
from rich.text import Text

from selfplay.core.run.progress import PlainLines, progress_bar


class RunDisplay:
    """Only the main process shows anything (``enabled``); the others stay quiet."""

    def __init__(
        self,
        config: Any,
        folder: Any,
        console: Console | None = None,
        enabled: bool = True,
        banner: tuple[str, tuple[str, ...]] = ("", ()),
    ) -> None:
        self.config, self.folder, self.enabled = config, folder, enabled
        self.banner = banner  # the plan's line of the recipe's settings, and its notes
        self.console = console or Console(stderr=True)
        self.last_eval = ""
        self.fired: dict[str, int] = {}  # monitor column -> the first iteration it fired
        self.progress = progress_bar(self.console, _Remaining())
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
        if getattr(c, "learners", None):
            self.console.print(escape(learners_line(c)))
        line, notes = self.banner
        if line:
            self.console.print(escape(line))
        for note in notes:
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
