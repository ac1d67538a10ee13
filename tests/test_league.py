"""The league in the loop: every sampler on every zero-sum game, reports, exact resume."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfplay.core.commands.cli import main
from selfplay.core.plan.config_loader import build_config
from selfplay.core.run.trainer import train

HELPER = Path(__file__).parent / "helpers" / "run_selfplay.py"
SMALL = {
    "matches": 4, "iterations": 2, "seed": 3, "name": "run",
    "cold_start": {"steps": 0}, "eval": {"matches": 2},
    "pool": {"snapshot_every": 1, "matches_per_pair": 2, "size": 2},
    "train": {"minibatch_size": 16}, "generation": {"max_new_tokens": 8},
}  # fmt: skip


def config_for(tmp_path: Path, **changes):
    settings = {**SMALL, "out": str(tmp_path), **changes}
    return build_config(None, {}, [f"{k}={v}" for k, v in _flat(settings)])


def _flat(settings: dict, prefix: str = ""):
    for key, value in settings.items():
        if isinstance(value, dict):
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def metrics(folder: Path) -> list[dict[str, str]]:
    with (folder / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


GAMES = ["tictactoe", "kuhn-poker", "rock-paper-scissors"]
SAMPLERS = ["pool", "psro:rm", "elo"]
# CI runs each sampler once and each game once; `pytest -m slow` runs every pair
PAIRS = [
    pytest.param(game, opponent, marks=[] if i == j else [pytest.mark.slow])
    for i, game in enumerate(GAMES)
    for j, opponent in enumerate(SAMPLERS)
]


@pytest.mark.parametrize(("game", "opponent"), PAIRS)
def test_every_pool_sampler_trains_on_every_zero_sum_game(tmp_path, game, opponent):
    result = train(config_for(tmp_path, game=game, opponent=opponent))
    folder = result.folder.path
    # snapshots 0 and 1 were taken, the size-2 pool evicted none; 2 then evicted 1
    assert sorted(p.name for p in (folder / "pool").iterdir()) == ["snapshot-0.pt", "snapshot-2.pt"]
    rows = metrics(folder)
    assert [r["pool/size"] for r in rows] == ["2.0", "2.0"]
    ratings = list(csv.DictReader((folder / "ratings.csv").open()))
    assert {"snapshot:0", "snapshot:2"} <= {r["name"] for r in ratings}
    assert (folder / "crossplay.csv").read_text().startswith("holder,opponent,mean_payoff")


def test_kuhn_reports_exact_exploitability_of_last_and_average_policies(tmp_path, capsys):
    result = train(config_for(tmp_path, game="kuhn-poker", opponent="psro:nash"))
    rows = metrics(result.folder.path)
    # `selfplay eval` on the final checkpoint measures the same policies again
    capsys.readouterr()
    assert main(["eval", str(result.folder.path), "--metric", "exploitability", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    averages = ("exploitability/iterates_average", "exploitability/iterates_linear_average")
    for key in ("exploitability/last", "exploitability/pool_average", *averages):
        assert report[key] == pytest.approx(float(rows[-1][key]), abs=1e-9)
    for key in ("exploitability/last", *averages):
        values = [float(r[key]) for r in rows]
        assert all(0 <= v <= 2 for v in values)  # NashConv/2 of Kuhn is at most 2
    assert float(rows[-1]["exploitability/pool_average"]) >= 0
    sigma = [k for k in rows[-1] if k.startswith("psro/sigma/")]
    assert sigma and abs(sum(float(rows[-1][k] or 0) for k in sigma) - 1) < 1e-6


def test_psro_run_resumes_bitwise_after_sigkill(tmp_path, kill_at_iteration):
    args = [
        "--game", "kuhn-poker", "--opponent", "psro:nash", "--matches", "8", "--seed", "5",
        "--cold-start", "5", "--set", "cold_start.batch_size=16", "--set", "eval.matches=2",
        "--set", "checkpoint_every=1", "--set", "pool.snapshot_every=1",
        "--set", "pool.matches_per_pair=4", "--set", "pool.size=2", "--iterations", "3",
    ]  # fmt: skip
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "OMP_NUM_THREADS": "1"}
    straight = subprocess.run(
        [sys.executable, str(HELPER), "run", *args, "--out", str(tmp_path), "--name", "s"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert straight.returncode == 0, straight.stderr

    kill_at_iteration([*args, "--out", str(tmp_path), "--name", "k"])
    resumed = subprocess.run(
        [sys.executable, str(HELPER), "run", "--resume", str(tmp_path / "k"), "--iterations", "3"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    keys = ("loss", "exploitability/last", "exploitability/pool_average", "elo/learner")
    expected = [{k: r.get(k) for k in keys} for r in metrics(tmp_path / "s")]
    assert [{k: r.get(k) for k in keys} for r in metrics(tmp_path / "k")] == expected
    assert (tmp_path / "k" / "ratings.csv").read_text() == (
        tmp_path / "s" / "ratings.csv"
    ).read_text()


def test_ddp_processes_share_the_pool_and_end_with_identical_weights(tmp_path):
    digests = tmp_path / "digests"
    args = [
        "--game", "rock-paper-scissors", "--opponent", "psro:nash", "--matches", "8",
        "--cold-start", "0", "--iterations", "2", "--devices", "2", "--strategy", "ddp",
        "--set", "pool.snapshot_every=1", "--set", "pool.matches_per_pair=2",
        "--set", "eval.matches=2", "--set", "callbacks=[test-digest]",
        "--out", str(tmp_path), "--name", "ddp",
    ]  # fmt: skip
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, str(HELPER), "run", *args],
        env={**env, "SELFPLAY_TEST_DIGESTS": str(digests)},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    ranks = sorted(p.read_text() for p in digests.iterdir())
    assert len(ranks) == 2 and ranks[0] == ranks[1]
    folder = tmp_path / "ddp"
    assert sorted(p.name for p in (folder / "pool").iterdir()) == [
        "snapshot-0.pt", "snapshot-1.pt", "snapshot-2.pt"
    ]  # fmt: skip
    assert [int(r["matches"]) for r in metrics(folder)] == [8, 8]


def test_psros_matrix_is_the_crossplay_table_a_user_reads(tmp_path):
    """One payoff table: PSRO solves the matrix of the same matches crossplay.csv shows."""
    config = config_for(tmp_path, game="kuhn-poker", opponent="psro:nash", iterations=3)
    result = train(config)
    with (result.folder.path / "crossplay.csv").open() as handle:
        shown = {
            (r["holder"], r["opponent"]): float(r["mean_payoff"]) for r in csv.DictReader(handle)
        }
    met = [(a, b) for a, b in shown if a.startswith("snapshot:") and b.startswith("snapshot:")]
    assert met, "the pool's members played each other"
    state = json.loads(json.dumps(_league_state(result.folder.path)))
    table = {(a, b): p / n for a, b, p, _, n in state["payoffs"]["pairs"]}
    for pair in met:
        assert table[pair] == pytest.approx(shown[pair], abs=5e-5)


def _league_state(folder: Path) -> dict:
    import torch

    newest = sorted((folder / "checkpoints").glob("iter-*"))[-1]
    state = torch.load(newest / "state.ckpt", weights_only=False)
    return state["league"]


def test_an_older_checkpoints_two_tables_load_as_the_one_table():
    from selfplay.core.league.league import _older_tables

    older = {
        "results": [["a", "b", 2.0, 2.0], ["b", "a", -2.0, 2.0]],
        "scores": [["a", "b", 2.0, 2.0], ["b", "a", 0.0, 2.0]],
    }
    assert _older_tables(older) == [["a", "b", 2.0, 2.0, 2.0], ["b", "a", -2.0, 0.0, 2.0]]
    without_scores = {"results": older["results"]}  # keep-best was off: nobody read scores
    assert _older_tables(without_scores)[0] == ["a", "b", 2.0, 1.0, 2.0]
