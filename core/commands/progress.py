"""What a run shows in the terminal: a progress bar while it runs, tables when it ends."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class RunDisplay:
    """Only the main process shows anything (``enabled``); the others stay quiet."""

    def __init__(
        self, config: Any, folder: Any, console: Console | None = None, enabled: bool = True
    ) -> None:
        self.config = config
        self.folder = folder
        self.enabled = enabled
        self.console = console or Console(stderr=True)
        self.last_eval = ""
        self.fired: dict[str, int] = {}  # monitor column -> the first iteration it fired
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )

    def __enter__(self) -> RunDisplay:
        if not self.enabled:
            return self
        c = self.config
        self.console.print(
            f"[bold]selfplay run[/bold] game={c.game} model={c.model} opponent={c.opponent} "
            f"estimator={c.estimator} objective={c.objective} matches={c.matches} "
            f"iterations={c.iterations} "
            f"-> {self.folder.path}"
        )
        self.progress.start()
        done = self.config.resume and _done(self.folder)
        self.task = self.progress.add_task(
            "training", total=c.iterations, completed=done or 0, status=""
        )
        return self

    def update(self, row: dict[str, Any]) -> None:
        if not self.enabled:
            return
        for key, value in row.items():
            if key.startswith("monitor/") and value:
                self.fired.setdefault(key, int(row.get("iteration", 0)))
        evals = {k: v for k, v in row.items() if k.startswith("eval/") and k.endswith("win_rate")}
        if evals:
            self.last_eval = " ".join(
                f"{k.split('/')[1]} {v:.2f}" for k, v in evals.items() if "non_loss" not in k
            )
        status = (
            f"reward {row['mean_reward']:+.3f}  invalid {row['invalid_rate']:.2f}"
            f"  loss {row.get('loss', 0):+.4f}  ent {row.get('entropy', 0):.2f}"
        )
        if self.last_eval:
            status += f"  eval win: {self.last_eval}"
        self.progress.update(self.task, advance=1, status=status)

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

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        self.progress.stop()
        self.console.print(f"Run folder: {self.folder.path}")


def troubleshooting_hint(fired: dict[str, int]) -> str | None:
    """The closing line when a monitor fired (None when none did)."""
    if not fired:
        return None
    what = ", ".join(f"{key} at iteration {it}" for key, it in sorted(fired.items()))
    return (
        f"A monitor fired during this run ({what}): docs/troubleshooting.md says what each "
        "symptom means and what to change."
    )


def _done(folder: Any) -> int:
    if not folder.metrics.exists():
        return 0
    rows = folder.read_metrics()
    return int(rows[-1]["iteration"]) if rows else 0
