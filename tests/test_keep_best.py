"""``pool.keep_best``: each new snapshot plays the pool, and a snapshot that falls below the
pool's best puts the learner back to the best one's weights (core/league/league.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from selfplay.core.commands.cli import main
from selfplay.core.commands.play import load_checkpoint_policy
from selfplay.core.league.keep_best import best_member, leader
from selfplay.core.league.snapshots import SnapshotError, SnapshotStore
from selfplay.core.models.lora import apply_lora
from selfplay.core.plan.build import build_learner
from selfplay.core.plan.config_loader import build_config
from tests.test_loop import selfplay

QUICK = [
    "--game", "tictactoe", "--matches", "8", "--cold-start", "30", "--seed", "3",
    "--set", "cold_start.batch_size=16", "--set", "eval.matches=4",
    "--set", "checkpoint_every=1", "--set", "train.minibatch_size=16",
    "--set", "pool.keep_best=true", "--set", "pool.snapshot_every=1",
    "--set", "pool.matches_per_pair=4",
]  # fmt: skip


def rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "metrics.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_the_learner_goes_back_only_when_the_newest_falls_below_the_best_by_the_margin():
    scores = {"snapshot:0": 0.5, "snapshot:5": 0.7, "snapshot:10": 0.6}
    assert best_member(scores, 0.05, "snapshot:10") == "snapshot:5"
    assert best_member(scores, 0.1, "snapshot:10") is None  # within the margin
    assert best_member(scores, 0.0, "snapshot:5") is None  # the newest is the best
    tied = {"snapshot:0": 0.6, "snapshot:5": 0.6, "snapshot:10": 0.4}
    assert best_member(tied, 0.05, "snapshot:10") == "snapshot:5"  # ties: the newer
    assert leader(tied) == "snapshot:5"  # the logged pool/best breaks ties the same way
    assert best_member({"snapshot:0": 0.5}, 0.0, "snapshot:0") is None


@pytest.mark.parametrize("lora", [False, True])
def test_restore_puts_the_snapshots_weights_back_into_the_live_model(tmp_path, lora):
    settings = ["game=tictactoe", "model=tiny", "seed=3", f"lora.enabled={str(lora).lower()}"]
    config = build_config(None, {}, settings)
    learner = build_learner(config)
    if lora:  # as the trainer wraps it (core/run/model_setup.py)
        learner.model = apply_lora(learner.model, config.lora)
    store = SnapshotStore(tmp_path, learner, lora=lora)
    trained = [p for p in learner.model.parameters() if p.requires_grad]
    store.save("snapshot:5")
    kept = [p.detach().clone() for p in trained]
    with torch.no_grad():
        for parameter in trained:
            parameter.add_(1.0)
    store.restore("snapshot:5")
    for parameter, value in zip(trained, kept, strict=True):
        assert torch.equal(parameter, value)  # the same tensors the optimiser holds
    with pytest.raises(SnapshotError, match=r"snapshot-6\.pt"):
        store.restore("snapshot:6")


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--set", "pool.snapshot_every=0"], "pool.snapshot_every is 0"),
        (["--learner", "player_0", "--learner", "player_1"], "several learners"),
    ],
)
def test_keep_best_without_snapshots_or_with_several_learners_exits_2(
    flags, said, tmp_path, capsys
):
    assert main(["run", *QUICK, *flags, "--out", str(tmp_path / "runs")]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_collapsed_learner_goes_back_to_the_best_snapshot_and_resumes_bitwise(
    tmp_path, monkeypatch, kill_at_iteration
):
    # noise in place of the weights after iteration 1: snapshot 2 writes nothing legal
    monkeypatch.setenv("SELFPLAY_TEST_SCRAMBLE_AT", "1")
    args = [*QUICK, "--set", "callbacks=[test-scramble]", "--iterations", "3"]
    straight = selfplay("run", *args, "--out", str(tmp_path), "--name", "s")
    assert straight.returncode == 0, straight.stderr
    folder = tmp_path / "s"
    table = {int(row["iteration"]): row for row in rows(folder)}
    for iteration, row in table.items():
        newest, best = float(row["pool/newest_score"]), float(row["pool/best_score"])
        assert (row["pool/rolled_back_to"] != "") == (newest < best - 0.05), iteration
    assert table[1]["pool/rolled_back_to"] == ""
    restored = table[2]["pool/rolled_back_to"]
    assert restored in ("0.0", "1.0"), "the scrambled snapshot 2 did not lose to the pool"
    assert "keep-best: snapshot 2 scored" in straight.stdout + straight.stderr
    # the checkpoint after iteration 2 holds the restored snapshot's weights, not snapshot 2's
    saved = load_checkpoint_policy(folder / "checkpoints" / "iter-000002").policy
    saved = saved.model.state_dict()
    for name in (f"snapshot-{int(float(restored))}.pt", "snapshot-2.pt"):
        pool = torch.load(folder / "pool" / name, weights_only=True)
        same = all(torch.equal(saved[key], value) for key, value in pool.items())
        assert same == (name != "snapshot-2.pt"), name

    kill_at_iteration(
        [*QUICK, "--iterations", "3", "--out", str(tmp_path), "--name", "r"],
        iteration=2,
        callbacks=("test-scramble",),
    )
    resumed = selfplay("run", "--resume", str(tmp_path / "r"), "--iterations", "3")
    assert resumed.returncode == 0, resumed.stderr
    timing = ("seconds", "elapsed")
    same_row = lambda row: {k: v for k, v in row.items() if not any(t in k for t in timing)}  # noqa: E731
    assert [same_row(r) for r in rows(tmp_path / "r")] == [same_row(r) for r in rows(folder)]
