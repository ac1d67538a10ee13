"""benchmarks/readme_figures.py: README's default-run sentence parses, and a wrong figure fails."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "readme_figures.py"
spec = importlib.util.spec_from_file_location("readme_figures", PATH)
figures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(figures)


def test_readme_quotes_five_seeds_for_both_opponents():
    quoted = figures.quoted(figures.README.read_text(encoding="utf-8"))
    assert set(quoted) == {"random", "minimax"}
    assert all(len(pairs) == 5 for pairs in quoted.values()), quoted


def summaries(folder: Path, pairs: dict[str, list[tuple[str, str]]], change: float = 0.0) -> None:
    """A finished run folder per seed whose summary.json holds README's own figures."""
    for seed in range(5):
        result = {"before": {}, "after": {}}
        for opponent, key, _ in figures.FIGURES:
            before, after = (float(v) for v in pairs[opponent][seed])
            if seed == 3 and opponent == "minimax":
                after += change
            result["before"][opponent] = {key: before}
            result["after"][opponent] = {key: after}
        run = folder / f"seed-{seed}"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps(result))


@pytest.mark.parametrize("change", [0.0, 0.01])
def test_the_check_passes_on_readmes_figures_and_names_one_that_differs(
    tmp_path, monkeypatch, capsys, change
):
    pairs = figures.quoted(figures.README.read_text(encoding="utf-8"))
    summaries(tmp_path, pairs, change)
    monkeypatch.setattr(sys, "argv", ["readme_figures.py", "--out", str(tmp_path)])
    code = figures.main()  # every summary exists, so nothing is trained
    out = capsys.readouterr().out
    if change:
        assert code == 1 and "seed 3: non-loss against `minimax`" in out
        assert "1 figure(s) differ" in out
    else:
        assert code == 0 and "README's figures match the rerun" in out
