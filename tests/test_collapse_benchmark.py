"""benchmarks/collapse.py: what counts as a collapse, and the report read from run folders."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from project_scripts import load_script

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "collapse.py"
collapse = load_script("benchmarks/collapse.py")


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
        writer.writerow(["iteration", collapse.MINIMAX, collapse.RANDOM, "loss", "elapsed_seconds"])
        writer.writerow([1, "", "", 0.1, 6])  # a row without an evaluation
        # resumed after 180 by a selfplay whose clock started again at 0
        points = ((170, 0.5, 60), (180, 0.9, 120), (190, 0.6, 30), (200, 0.65, 90))
        for iteration, value, seconds in points:
            writer.writerow([iteration, value, value / 2, 0.1, seconds])
    collapse.report(tmp_path, ["pool", "psro"], [0], 0.2)
    said = capsys.readouterr().out
    assert "pool seed 0: collapsed at 190 (best so far 0.90, then 0.60); last three 0.717" in said
    assert "0.50 0.90 0.60 0.65" in said and "0.25 0.45 0.30 0.33" in said
    assert "psro seed 0: not finished" in said
    assert (
        "pool: last three 0.717 (0.717-0.717, 1 seeds); lowest after 180: 0.60; "
        "collapses after 180: 1; minutes 4"  # 120 s before the restart, 90 after
    ) in said
    assert "psro: last three none finished" in said


def test_each_arm_changes_only_who_sits_opposite_in_training(tmp_path):
    commands = {arm: collapse.command(arm, 3, 360, tmp_path) for arm in collapse.ARMS}
    for command in commands.values():
        assert command[command.index("--recipe") + 1] == "tictactoe"
        assert command[command.index("--iterations") + 1] == "360"
        assert "seed=3" in command
    assert "pool.keep_best=true" in commands["keep-best"]
    assert "opponent=psro:nash" in commands["psro"]
    assert not any("scripted" in part for command in commands.values() for part in command)


def test_a_stopped_benchmark_run_goes_on_from_its_newest_checkpoint(tmp_path):
    """benchmarks/learning.py on a folder whose run stopped continues it, not starts afresh."""
    import subprocess

    script = PATH.parent / "learning.py"
    small = ["matches=4", "eval.matches=4", "eval.every=1", "pool.snapshot_every=1"]
    base = [sys.executable, str(script), "--recipe", "tictactoe", "--minutes", "1000"]
    base += ["--threads", "1", "--out", str(tmp_path)]
    base += [item for setting in small for item in ("--set", setting)]
    first = subprocess.run([*base, "--iterations", "1"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    run = tmp_path / "run"
    (run / "summary.json").unlink()  # as if stopped after its first iteration
    second = subprocess.run([*base, "--iterations", "2"], capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert f"going on with the stopped run {run}" in second.stdout
    assert not (tmp_path / "run-2").exists()
    with open(run / "metrics.csv", newline="") as handle:
        iterations = [int(row["iteration"]) for row in csv.DictReader(handle)]
    assert iterations.count(1) >= 1 and 2 in iterations
    assert json.loads((run / "summary.json").read_text())
