"""What a run prints around its progress: the pointer to docs/troubleshooting.md, log lines."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from selfplay.core.commands.progress import EVERY_VARIABLE, PlainLines, RunDisplay

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


# ---- progress when the output is not a terminal ----------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_come_every_n_seconds_with_an_eta_and_once_at_the_end():
    said: list[str] = []
    clock = FakeClock()
    lines = PlainLines("cold start", 10, said.append, every=30, clock=clock)
    for _ in range(3):
        clock.now += 5
        lines.advance(1, "loss 1.000")
    assert said == []  # 15 s: not yet
    clock.now += 20
    lines.advance(1, "loss 0.500")
    assert said == ["cold start: 4/10, 0:35 elapsed, about 0:52 left  loss 0.500"]
    lines.advance(6)
    assert said[-1] == "cold start: 10/10, 0:35 elapsed"


def test_a_run_piped_to_a_log_prints_iteration_lines(monkeypatch):
    monkeypatch.setenv(EVERY_VARIABLE, "0")
    text = closing_text(row(1), row(2))
    assert "iteration: 1/2" in text and "about" in text and "iteration: 2/2" in text


def test_the_cold_start_says_its_progress_when_not_on_a_terminal(monkeypatch):
    from selfplay.core.config import RunConfig
    from selfplay.core.models.tiny import load_tiny_policy
    from selfplay.core.train.cold_start import warm_up
    from selfplay.games.tictactoe import TicTacToe

    monkeypatch.setenv(EVERY_VARIABLE, "0")
    said: list[str] = []
    config = RunConfig(cold_start={"steps": 2, "batch_size": 4})
    warm_up(load_tiny_policy(), TicTacToe(), config, said.append, Console(file=io.StringIO()))
    progress = [line for line in said if line.startswith("cold start: 1/2")]
    assert progress and "loss" in progress[0], said
    assert any(line.startswith("cold start: 2/2") for line in said)
