"""What a run shows in the terminal: a progress bar while it runs, a table when it ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

SHOWN = (
    ("iteration", "iter"),
    ("mean_reward", "reward"),
    ("learner_win_rate", "win"),
    ("learner_non_loss_rate", "non-loss"),
    ("invalid_rate", "invalid"),
    ("mean_turns", "turns"),
    ("tokens_per_s", "tok/s"),
)


class RunDisplay:
    def __init__(self, config: Any, folder: Path, console: Console | None = None) -> None:
        self.config = config
        self.folder = folder
        self.console = console or Console(stderr=True)
        self.rows: list[dict[str, Any]] = []
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
        c = self.config
        self.console.print(
            f"[bold]selfplay run[/bold] game={c.game} model={c.model} opponent={c.opponent} "
            f"matches={c.matches} iterations={c.iterations} -> {self.folder}"
        )
        self.progress.start()
        self.task = self.progress.add_task("iterations", total=c.iterations, status="")
        return self

    def update(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        status = f"reward {row.get('mean_reward', 0):+.3f} invalid {row['invalid_rate']:.2f}"
        self.progress.update(self.task, advance=1, status=status)

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()
        if self.rows:
            self.console.print(self.table())
        self.console.print(f"Run folder: {self.folder}")

    def table(self) -> Table:
        table = Table(title="iterations")
        for _, header in SHOWN:
            table.add_column(header, justify="right")
        for row in self.rows:
            table.add_row(*(str(row.get(key, "")) for key, _ in SHOWN))
        return table
