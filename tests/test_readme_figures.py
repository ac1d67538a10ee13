"""benchmarks/readme_figures.py: README's learning paragraphs parse, and a wrong figure fails."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from project_scripts import load_script

figures = load_script("benchmarks/readme_figures.py")
README = figures.README.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(figures.CLAIMS))
def test_readme_quotes_five_seeds_for_every_figure_of_every_claim(name):
    claim = figures.CLAIMS[name]
    quoted = figures.quoted(README, claim)
    assert len(quoted) == len(claim.figures)
    for said, (_, read) in zip(quoted, claim.figures, strict=True):
        width = 2 if isinstance(read, figures.Summary) else 1
        assert [len(figure) for figure in said] == [width] * 5, (name, said)


def fake_runs(folder: Path, claim, said: list[list[tuple[str, ...]]], change: float) -> None:
    """A finished run folder per seed holding README's own figures (seed 3's first one moved)."""
    for seed in range(5):
        run = folder / f"seed-{seed}" / claim.run
        run.mkdir(parents=True)
        result, rows = {"before": {}, "after": {}}, {}
        for index, (_, read) in enumerate(claim.figures):
            values = [float(v) for v in said[index][seed]]
            if seed == 3 and index == 0:
                values[-1] += change
            if isinstance(read, figures.Summary):
                result["before"].setdefault(read.opponent, {})[read.key] = values[0]
                result["after"].setdefault(read.opponent, {})[read.key] = values[1]
            else:
                rows[read.key] = [values[0]] * read.last
        (run / "summary.json").write_text(json.dumps(result))
        if rows:
            with open(run / "metrics.csv", "w", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(rows)
                writer.writerows(zip(*rows.values(), strict=True))


@pytest.mark.parametrize("change", [0.0, 0.01])
@pytest.mark.parametrize("name", sorted(figures.CLAIMS))
def test_the_check_passes_on_readmes_figures_and_names_one_that_differs(
    tmp_path, monkeypatch, capsys, name, change
):
    claim = figures.CLAIMS[name]
    fake_runs(tmp_path, claim, figures.quoted(README, claim), change)
    argv = ["readme_figures.py", "--claim", name, "--out", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", argv)
    code = figures.main()  # every run has finished, so nothing is trained
    out = capsys.readouterr().out
    if change:
        assert code == 1 and f"seed 3: {claim.figures[0][0]}" in out
        assert "1 figure(s) differ" in out
    else:
        assert code == 0 and "README's figures match the rerun" in out


def test_a_seed_without_results_is_run_with_the_claims_command(tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr(figures.subprocess, "run", lambda argv, check: ran.append(argv))
    args = type("Args", (), {"out": tmp_path, "threads": 1})()
    with pytest.raises(FileNotFoundError):  # the fake command wrote nothing to read
        figures.measure(figures.CLAIMS["kuhn-legal-pg"], 3, args)
    (argv,) = ran
    assert argv[0] == sys.executable and argv[1].endswith("benchmarks/opponents.py")
    assert argv[argv.index("--seed") + 1] == "3"
    assert argv[argv.index("--out") + 1] == str((tmp_path / "seed-3").resolve())
    assert "objective=legal-pg" in argv
