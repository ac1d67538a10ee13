"""The preference and imitation objectives end to end: each trains, and resumes bitwise."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

HELPER = Path(__file__).parent / "helpers" / "run_selfplay.py"
SOLVER = [
    "--game", "math-solver", "--matches", "8", "--cold-start", "20", "--seed", "5",
    "--set", "game_options.answers=3", "--set", "generation.max_new_tokens=12",
    "--set", "eval.matches=4", "--set", "checkpoint_every=1",
    "--set", "cold_start.batch_size=16", "--set", "train.minibatch_size=8",
]  # fmt: skip
OBJECTIVES = {
    "dpo": ["--objective", "dpo", "--set", "train.update_epochs=2"],
    "sft": ["--objective", "sft", "--set", "objective_options.keep=all"],
}


def selfplay(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, str(HELPER), *args], env=env, capture_output=True, text=True, timeout=600
    )


def rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("objective", sorted(OBJECTIVES))
def test_the_objective_trains_and_resumes_bitwise_after_sigkill(
    objective, tmp_path, kill_at_iteration
):
    args = [*SOLVER, *OBJECTIVES[objective], "--iterations", "3", "--out", str(tmp_path)]
    straight = selfplay("run", *args, "--name", "s")
    assert straight.returncode == 0, straight.stderr
    logged = rows(tmp_path / "s")
    steps = sum(int(row["update_steps"]) for row in logged)
    assert steps > 0, "the objective never took an optimiser step"
    if objective == "dpo":
        assert sum(float(row["pairs/formed"]) for row in logged) > 0
        assert any(float(row["margin"]) != 0 for row in logged)  # later steps move off M_t
    else:
        assert sum(float(row["sft/kept"]) for row in logged) > 0

    kill_at_iteration([*args, "--name", "k"])
    resumed = selfplay("run", "--resume", str(tmp_path / "k"), "--iterations", "3")
    assert resumed.returncode == 0, resumed.stderr
    column = "loss"
    assert [r[column] for r in rows(tmp_path / "k")] == [r[column] for r in logged]
