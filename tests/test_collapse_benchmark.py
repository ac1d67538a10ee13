"""benchmarks/collapse.py: what counts as a collapse, and the report read from run folders."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "collapse.py"
spec = importlib.util.spec_from_file_location("collapse", PATH)
collapse = importlib.util.module_from_spec(spec)
sys.modules["collapse"] = collapse
spec.loader.exec_module(collapse)


def test_a_collapse_is_a_drop_from_the_best_so_far_that_lasts_two_evaluations():
    rule = collapse.collapse
    rising = [(10, 0.2), (20, 0.5), (30, 0.7), (40, 0.75)]
    assert rule(rising, 0.2) is None
    one_bad = [(10, 0.8), (20, 0.55), (30, 0.8)]  # one evaluation's noise
    assert rule(one_bad, 0.2) is None
    fell = [(10, 0.3), (20, 0.85), (30, 0.6), (40, 0.62), (50, 0.9)]
    assert rule(fell, 0.2) == (30, 0.85, 0.6)
    assert rule(fell, 0.3) is None
    assert rule([(10, 0.9), (20, 0.1)], 0.2) is None  # the last evaluation has no follower


def test_the_report_reads_each_runs_curves_and_names_the_unfinished(tmp_path, capsys):
    run = tmp_path / "pool-0" / "run"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({}))
    with open(run / "metrics.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["iteration", collapse.MINIMAX, collapse.RANDOM, "loss"])
        writer.writerow([1, "", "", 0.1])  # a row without an evaluation
        for iteration, value in ((10, 0.5), (20, 0.9), (30, 0.6), (40, 0.65)):
            writer.writerow([iteration, value, value / 2, 0.1])
    collapse.report(tmp_path, ["pool", "psro"], [0], 0.2)
    said = capsys.readouterr().out
    assert "pool seed 0: collapsed at 30 (best so far 0.90, then 0.60); last three 0.717" in said
    assert "0.50 0.90 0.60 0.65" in said and "0.25 0.45 0.30 0.33" in said
    assert "psro seed 0: not finished" in said


def test_each_arm_changes_only_who_sits_opposite_in_training(tmp_path):
    commands = {arm: collapse.command(arm, 3, 360, tmp_path) for arm in collapse.ARMS}
    for command in commands.values():
        assert command[command.index("--recipe") + 1] == "tictactoe"
        assert command[command.index("--iterations") + 1] == "360"
        assert "seed=3" in command
    assert "pool.keep_best=true" in commands["keep-best"]
    assert "opponent=psro:nash" in commands["psro"]
    assert not any("scripted" in part for command in commands.values() for part in command)
