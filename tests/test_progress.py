"""What a run prints around its progress: the pointer to docs/troubleshooting.md, log lines."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from selfplay.core.commands.progress import RunDisplay

ROOT = Path(__file__).resolve().parents[1]


def display(out: io.StringIO) -> RunDisplay:
    config = SimpleNamespace(
        game="tictactoe", model="tiny", opponent="latest", estimator="rae", objective="pg",
        matches=4, iterations=2, resume=None,
    )  # fmt: skip
    folder = SimpleNamespace(path=Path("runs/x"), metrics=Path("/nonexistent/metrics.csv"))
    console = Console(file=out, width=200, force_terminal=False)
    return RunDisplay(config, folder, console)


def row(iteration: int, **extra: float) -> dict:
    return {"iteration": iteration, "mean_reward": 0.0, "invalid_rate": 0.0, **extra}


def closing_text(*rows: dict) -> str:
    out = io.StringIO()
    with display(out) as shown:
        for r in rows:
            shown.update(r)
        shown.summary({}, {})
    return out.getvalue()


def test_the_summary_names_the_troubleshooting_guide_when_a_monitor_fired():
    text = closing_text(row(1, **{"monitor/hacking": 0.0}), row(2, **{"monitor/hacking": 1.0}))
    assert "docs/troubleshooting.md" in text
    assert "monitor/hacking at iteration 2" in text


def test_the_summary_stays_quiet_when_no_monitor_fired():
    text = closing_text(row(1, **{"monitor/hacking": 0.0}), row(2))
    assert "troubleshooting" not in text


def test_the_guide_covers_every_monitor_column_and_exists():
    guide = (ROOT / "docs" / "troubleshooting.md").read_text()
    for column in ("monitor/hacking", "invalid_rate", "reward/judge/unparsable",
                   "exploitability/last", "diversity/", "eval/held_out/accuracy"):  # fmt: skip
        assert column in guide, column
