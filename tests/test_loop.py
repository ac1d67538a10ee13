"""The training loop end to end: outputs, exact resume after SIGKILL, non-finite losses, DDP."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import torch
import yaml

HELPER = Path(__file__).parent / "helpers" / "run_selfplay.py"
TINY = [
    "--game", "tictactoe", "--matches", "8", "--cold-start", "5", "--seed", "11",
    "--set", "eval.matches=4", "--set", "checkpoint_every=1", "--set", "train.minibatch_size=16",
    "--set", "cold_start.batch_size=16",
]  # fmt: skip


def selfplay(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, str(HELPER), *args],
        env=full_env, capture_output=True, text=True, timeout=600, **kwargs,
    )  # fmt: skip


def column_of(folder: Path, name: str) -> dict[int, str]:
    with (folder / "metrics.csv").open() as f:
        return {int(row["iteration"]): row[name] for row in csv.DictReader(f)}


def losses(folder: Path) -> dict[int, str]:
    with (folder / "metrics.csv").open() as f:
        return {int(row["iteration"]): row["loss"] for row in csv.DictReader(f)}


def test_run_folder_holds_config_metrics_episodes_checkpoints(tmp_path):
    out = selfplay("run", *TINY, "--iterations", "2", "--out", str(tmp_path), "--name", "a")
    assert out.returncode == 0, out.stderr
    folder = tmp_path / "a"
    assert (folder / "config.yaml").exists() and (folder / "episodes.jsonl").exists()
    assert (folder / "checkpoints" / "latest").read_text() == "iter-000002"
    assert sorted(p.name for p in (folder / "checkpoints").iterdir()) == [
        "iter-000001", "iter-000002", "latest"
    ]  # fmt: skip
    assert set(losses(folder)) == {1, 2}
    assert any((folder / "tensorboard").glob("events.out.tfevents.*"))
    assert "win rate" in out.stderr  # the before/after table


def test_resume_after_sigkill_is_bitwise_equal(tmp_path, kill_at_iteration):
    summed = ["--set", "callbacks=[test-running-sum]"]
    straight = selfplay(
        "run", *TINY, *summed, "--iterations", "3", "--out", str(tmp_path), "--name", "s"
    )
    assert straight.returncode == 0, straight.stderr

    kill_at_iteration(
        [*TINY, "--iterations", "3", "--out", str(tmp_path), "--name", "k"],
        callbacks=("test-running-sum",),
    )

    resumed = selfplay("run", "--resume", str(tmp_path / "k"), "--iterations", "3")
    assert resumed.returncode == 0, resumed.stderr
    assert losses(tmp_path / "k") == losses(tmp_path / "s")  # the text of every logged loss
    # a callback's state resumes too: its running sum goes on from the checkpoint's
    column = "test/running_sum"
    assert column_of(tmp_path / "k", column) == column_of(tmp_path / "s", column)
    # the clock goes on too: elapsed_seconds counts the killed process's iterations
    elapsed = {i: float(v) for i, v in column_of(tmp_path / "k", "elapsed_seconds").items()}
    saved = torch.load(tmp_path / "k" / "checkpoints" / "iter-000003" / "state.ckpt")
    assert saved["progress"]["seconds"] == elapsed[3]
    # a checkpoint is taken after the callbacks' on_iteration_end (Lightning's order)
    assert saved["callbacks"]["test-running-sum"]["ended"] == 3
    assert elapsed[1] < elapsed[2] < elapsed[3]


def test_lora_reference_is_the_cold_started_policy_and_resumes_exactly(tmp_path):
    # one optimiser step per iteration: iteration 1's KL is measured before any RL step
    lora = [*TINY, "--lora", "--cold-start", "20", "--set", "train.minibatch_size=4096"]
    # every tiny-LoRA move is invalid after so short a cold start, so all advantages are 0;
    # the entropy bonus still moves the policy, in steps big enough for the KL to show
    lora += ["--set", "train.lr=1e-2", "--set", "train.entropy_coef=0.1"]
    straight = selfplay("run", *lora, "--iterations", "3", "--out", str(tmp_path), "--name", "s")
    assert straight.returncode == 0, straight.stderr
    with (tmp_path / "s" / "metrics.csv").open() as f:
        kl = {int(row["iteration"]): float(row["kl"]) for row in csv.DictReader(f)}
    assert kl[1] == 0.0 and kl[3] > 0.0  # the reference is the cold start's policy, not the base
    first = selfplay("run", *lora, "--iterations", "2", "--out", str(tmp_path), "--name", "r")
    assert first.returncode == 0, first.stderr
    resumed = selfplay("run", "--resume", str(tmp_path / "r"), "--iterations", "3")
    assert resumed.returncode == 0, resumed.stderr
    assert losses(tmp_path / "r")[3] == losses(tmp_path / "s")[3]


def test_resume_with_nothing_left_to_train_names_the_folder(tmp_path):
    done = selfplay("run", *TINY, "--iterations", "1", "--out", str(tmp_path), "--name", "d")
    assert done.returncode == 0, done.stderr
    again = selfplay("run", "--resume", str(tmp_path / "d"), "--iterations", "1")
    assert again.returncode == 2
    assert str(tmp_path / "d") in again.stderr and "nothing to train" in again.stderr


def test_config_yaml_says_what_a_resumed_run_now_is_and_a_refused_resume_leaves_it(tmp_path):
    run = tmp_path / "c"
    first = selfplay("run", *TINY, "--iterations", "1", "--out", str(tmp_path), "--name", "c")
    assert first.returncode == 0, first.stderr
    leg = selfplay("run", "--resume", str(run), "--iterations", "2", "--set", "minutes=30")
    assert leg.returncode == 0, leg.stderr
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert (config["iterations"], config["minutes"]) == (2, 30)
    saved = (run / "config.yaml").read_text()
    assert yaml.safe_load((run / "checkpoints" / "iter-000002" / "config.yaml").read_text()) == (
        config
    )
    refused = selfplay("run", "--resume", str(run), "--iterations", "2", "--set", "minutes=5")
    assert refused.returncode == 2 and "nothing to train" in refused.stderr
    assert (run / "config.yaml").read_text() == saved


def test_resume_refuses_changed_settings(tmp_path):
    out = selfplay("run", "--resume", str(tmp_path), "--matches", "4")
    assert out.returncode == 2 and "config.yaml" in out.stderr


def test_a_resume_may_set_a_new_time_limit_and_nothing_that_changes_training(tmp_path):
    run = tmp_path / "t"
    first = selfplay(
        "run", *TINY, "--iterations", "3", "--set", "minutes=0.00001", "--out", str(tmp_path),
        "--name", "t",
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert len(losses(run)) == 1  # the limit stopped it after one iteration
    refused = selfplay("run", "--resume", str(run), "--set", "minutes=60", "--set", "matches=4")
    said = " ".join(refused.stderr.split())
    assert (
        refused.returncode == 2
        and "may change only what leaves the iterations already trained" in said
    )
    assert "(also given: matches)" in said and "train.micro_batch_tokens" in said
    bad = selfplay("run", "--resume", str(run), "--set", "minutes=-1")
    assert bad.returncode == 2 and "'minutes'" in bad.stderr
    assert "cp " not in bad.stderr  # the saved config.yaml is fine: no repair to suggest
    again = selfplay("run", "--resume", str(run), "--set", "minutes=60")
    assert again.returncode == 0, again.stderr
    assert sorted(losses(run)) == [1, 2, 3]  # one leg to the end: the new limit applied


def test_a_resume_may_lower_the_micro_batch_budget_as_the_out_of_memory_advice_says(tmp_path):
    run = tmp_path / "m"
    first = selfplay("run", *TINY, "--iterations", "1", "--out", str(tmp_path), "--name", "m")
    assert first.returncode == 0, first.stderr
    again = selfplay(
        "run", "--resume", str(run), "--iterations", "2", "--set", "train.micro_batch_tokens=64"
    )
    assert again.returncode == 0, again.stderr
    assert sorted(losses(run)) == [1, 2]


def test_a_checkpoint_that_hashed_its_time_limit_resumes_with_a_new_one(tmp_path, monkeypatch):
    import torch

    from selfplay.core.commands.cli import main
    from selfplay.core.run.folder import checkpoint

    # checkpoints written before a resume could change the limit hashed it with the settings
    real = checkpoint.config_hash
    monkeypatch.setattr(checkpoint, "config_hash", lambda c, **_: real(c, with_minutes=True))
    args = ["run", *TINY, "--iterations", "2", "--out", str(tmp_path), "--name", "old"]
    threads = torch.get_num_threads()
    try:
        assert main([*args, "--set", "minutes=0.00001", "--set", "threads=1"]) == 0
        assert len(losses(tmp_path / "old")) == 1
        monkeypatch.setattr(checkpoint, "config_hash", real)
        assert main(["run", "--resume", str(tmp_path / "old"), "--set", "minutes=60"]) == 0
    finally:
        torch.set_num_threads(threads)
    assert sorted(losses(tmp_path / "old")) == [1, 2]


def test_a_run_written_before_a_setting_existed_resumes_and_a_changed_one_is_named(
    tmp_path, monkeypatch, capfd
):
    import yaml

    from selfplay.core.commands.cli import main
    from selfplay.core.run.folder import checkpoint, resume, run_folder

    def older(settings):  # as a selfplay without pool.keep_best wrote them
        pool = {k: v for k, v in settings["pool"].items() if not k.startswith("keep_best")}
        return {**settings, "pool": pool}

    real_hash, real_text = checkpoint.config_hash, run_folder.config_text
    monkeypatch.setattr(checkpoint, "config_hash", lambda c, **kw: real_hash(older(c), **kw))
    text = lambda config: yaml.safe_dump(older(yaml.safe_load(real_text(config))))  # noqa: E731
    monkeypatch.setattr(run_folder, "config_text", text)
    monkeypatch.setattr(resume, "config_text", text)
    run = tmp_path / "old"
    threads = torch.get_num_threads()
    try:
        args = ["run", *TINY, "--iterations", "2", "--out", str(tmp_path), "--name", "old"]
        assert main([*args, "--set", "threads=1"]) == 0
        assert "keep_best" not in (run / "checkpoints" / "iter-000002" / "config.yaml").read_text()
        for patched, real in ((checkpoint, real_hash), (resume, real_text)):
            monkeypatch.setattr(patched, real.__name__, real)
        monkeypatch.setattr(run_folder, "config_text", real_text)
        assert main(["run", "--resume", str(run), "--iterations", "3"]) == 0
        assert sorted(losses(run)) == [1, 2, 3]
        # a setting changed by hand in config.yaml is refused, named with both values
        config = yaml.safe_load((run / "config.yaml").read_text())
        config["train"]["lr"] = 0.125
        (run / "config.yaml").write_text(yaml.safe_dump(config))
        capfd.readouterr()
        refused = main(["run", "--resume", str(run), "--iterations", "4"])
    finally:
        torch.set_num_threads(threads)
    said = " ".join(capfd.readouterr().err.split())
    assert refused == 4, said
    assert "train.lr: 0.0001 in the checkpoint, 0.125 now" in said
    assert sorted(losses(run)) == [1, 2, 3]


def test_repeated_non_finite_losses_stop_with_exit_code_3(tmp_path):
    # a non-finite reward no longer reaches the loss (it is dropped where it is made), so
    # the test objective makes the loss itself NaN
    out = selfplay(
        "run", *TINY, "--objective", "test-nan-loss", "--iterations", "5", "--out", str(tmp_path),
    )  # fmt: skip
    assert out.returncode == 3, out.stderr
    assert "non-finite" in out.stderr


def test_ddp_two_processes_end_with_identical_weights(tmp_path):
    digests = tmp_path / "digests"
    out = selfplay(
        "run", *TINY, "--iterations", "2", "--devices", "2", "--strategy", "ddp",
        "--set", "callbacks=[test-digest]", "--out", str(tmp_path), "--name", "ddp",
        # each process plays on from its own matches' positions; the per-position table is
        # reduced across processes (core/train/branching.py, core/algorithms/state_values.py)
        "--set", "branches.positions=2", "--set", "branches.matches=3",
        "--set", "estimator_options.per_state=true",
        env={"SELFPLAY_TEST_DIGESTS": str(digests)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    ranks = sorted(p.read_text() for p in digests.iterdir())
    assert len(ranks) == 2 and ranks[0] == ranks[1]
    rows = list(csv.DictReader((tmp_path / "ddp" / "metrics.csv").open()))
    assert [int(r["matches"]) for r in rows] == [8, 8]  # both processes' matches counted
    assert [int(r["branch_matches"]) for r in rows] == [12, 12]  # 2 positions x 3, twice
    episodes = (tmp_path / "ddp" / "episodes.jsonl").read_text().splitlines()
    assert len(episodes) == 16
