"""Resume never loses work: damaged or missing checkpoints, a missing pointer, SIGKILL anywhere.

A resumed run must continue from the newest *complete* checkpoint, say which damaged ones it
passed over (setting them aside, never deleting them), end with the same losses as a run
that was never interrupted, and change nothing when no checkpoint is usable.
"""

from __future__ import annotations

import pytest
from kit import TINY, digest, fails_cleanly, losses, said, selfplay

NEWEST = "checkpoints/iter-000002/state.ckpt"


def damage(folder, how: str) -> None:
    state = folder / NEWEST
    if how == "missing":
        state.unlink()
    elif how == "zero-byte":
        state.write_bytes(b"")
    elif how == "truncated":
        state.write_bytes(state.read_bytes()[: state.stat().st_size // 3])
    elif how == "bit-flipped":
        data = bytearray(state.read_bytes())
        data[len(data) // 2] ^= 0x10  # inside a tensor: torch.load would not notice
        state.write_bytes(bytes(data))


def resumes_like_the_straight_run(folder, runs) -> None:
    out = selfplay("run", "--resume", str(folder), "--iterations", "3")
    assert out.returncode == 0, out.stderr
    assert losses(folder) == losses(runs["three"])  # the text of every logged loss
    lines = (folder / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == len((runs["three"] / "episodes.jsonl").read_text().splitlines())
    assert (folder / "checkpoints" / "latest").read_text() == "iter-000003"


def test_a_missing_pointer_resumes_from_the_newest_checkpoint(run_copy, runs):
    (run_copy / "checkpoints" / "latest").unlink()
    newest = (run_copy / NEWEST).stat()
    out = selfplay("run", "--resume", str(run_copy), "--iterations", "3")
    assert out.returncode == 0, out.stderr
    assert "cold start" not in out.stderr  # continued, not started over
    assert losses(run_copy) == losses(runs["three"])
    kept = (run_copy / NEWEST).stat()  # the checkpoint it continued from, untouched
    assert (kept.st_ino, kept.st_mtime_ns) == (newest.st_ino, newest.st_mtime_ns)


@pytest.mark.parametrize(
    "how",
    [
        "zero-byte",
        "bit-flipped",
        pytest.param("missing", marks=pytest.mark.slow),
        pytest.param("truncated", marks=pytest.mark.slow),
    ],
)
def test_a_damaged_newest_checkpoint_falls_back_to_the_one_before(run_copy, runs, how):
    damage(run_copy, how)
    out = selfplay("run", "--resume", str(run_copy), "--iterations", "3")
    assert out.returncode == 0, out.stderr
    text = said(out)
    assert "iter-000002 is damaged" in text and "Resuming from iter-000001" in text
    assert losses(run_copy) == losses(runs["three"])
    kept = run_copy / "checkpoints" / "damaged-iter-000002"
    assert kept.is_dir()  # set aside for the user, not deleted
    assert sorted(p.name for p in (run_copy / "checkpoints").iterdir()) == [
        "damaged-iter-000002", "iter-000002", "iter-000003", "latest"
    ]  # fmt: skip


def test_no_complete_checkpoint_exits_4_and_changes_nothing(run_copy):
    damage(run_copy, "zero-byte")
    (run_copy / "checkpoints" / "iter-000001" / "state.ckpt").write_bytes(b"")
    before = digest(run_copy)
    out = selfplay("run", "--resume", str(run_copy), "--iterations", "3")
    fails_cleanly(out, 4, "none is complete", "nothing was changed", "iter-000001")
    assert digest(run_copy) == before  # metrics, episodes and checkpoints untouched


@pytest.mark.slow  # held before: a guard that "start over" stays for that case alone
def test_a_run_that_never_checkpointed_starts_over(tmp_path, kill_at_iteration):
    # killed in iteration 1, before its checkpoint: nothing to keep, so a resume starts over
    args = [*TINY, "--set", "checkpoint_every=5", "--iterations", "2"]
    kill_at_iteration([*args, "--out", str(tmp_path), "--name", "k"], iteration=1)
    assert not (tmp_path / "k" / "checkpoints").exists()
    out = selfplay("run", "--resume", str(tmp_path / "k"), "--iterations", "2")
    assert out.returncode == 0, out.stderr
    assert set(losses(tmp_path / "k")) == {1, 2}


# SIGKILL from the start of iteration 2 at the N-th call of each of these: the whole
# iteration, and every step of writing its checkpoint (see tests/helpers/kill_point.py)
KILL_POINTS = [
    "core/league/seating.py:seat_matches#1",
    "core/rollout.py:play#1",
    "core/rollout.py:_advance#7",
    "core/reward_pipeline.py:RewardPipeline.__call__#1",
    "core/train/samples.py:episode_samples#1",
    "core/algorithms/rae.py:RAE.__call__#1",
    "core/train/update/updater.py:Updater.update#1",
    "core/train/update/updater.py:Updater._step#2",
    "core/run/folder/episode_log.py:write_episodes#1",
    "core/league/league.py:League.after_iteration#1",
    "core/run/folder/run_folder.py:RunFolder._append_metrics#1",
    "core/run/folder/run_folder.py:TensorBoard.log#1",
    "core/run/folder/resume.py:save#1",
    "torch/serialization.py:_save#1",
    "core/run/folder/checkpoint.py:_manifest#1",
    "core/run/folder/checkpoint.py:_sha256#2",
    "posix:replace#2",  # the finished folder renamed into place
    "posix:replace#3",  # the pointer replaced
    "core/run/folder/checkpoint.py:_prune#1",
    "core/league/league.py:League.write_tables#1",
]


@pytest.mark.slow
@pytest.mark.parametrize("point", KILL_POINTS)
def test_sigkill_anywhere_in_an_iteration_resumes_bitwise(tmp_path, runs, point):
    killed = selfplay(
        "run", *TINY, "--set", "callbacks=[test-kill-point]", "--iterations", "3",
        "--out", str(tmp_path), "--name", "k", env={"SELFPLAY_TEST_KILL_AT": f"2>{point}"},
    )  # fmt: skip
    assert killed.returncode == -9, f"never reached {point}: {killed.stderr[-2000:]}"
    resumes_like_the_straight_run(tmp_path / "k", runs)
    assert not list((tmp_path / "k" / "checkpoints").glob(".tmp-*"))


def test_ctrl_c_says_how_to_go_on_and_the_resume_says_where_it_goes_on(
    tmp_path, monkeypatch, capsys
):
    """Interrupted in its second iteration: exit 130 naming the resume, which continues from
    the first iteration's checkpoint and says so."""
    from selfplay.core.commands.cli import main
    from selfplay.core.train import rollouts

    trained = rollouts.Rollouts.trained

    def interrupted_in_the_second(self, iteration):
        if iteration == 2:
            raise KeyboardInterrupt
        trained(self, iteration)

    monkeypatch.setattr(rollouts.Rollouts, "trained", interrupted_in_the_second)
    folder = tmp_path / "run"
    args = ["run", *TINY, "--iterations", "3", "--out", str(tmp_path), "--name", "run"]
    assert main(args) == 130
    err = " ".join(capsys.readouterr().err.split())
    assert (
        f"interrupted: {folder} keeps everything up to its last checkpoint, iter-000001: "
        f"continue with `selfplay run --resume {folder}`." in err
    )
    monkeypatch.setattr(rollouts.Rollouts, "trained", trained)
    assert main(["run", "--resume", str(folder)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert f"resuming {folder} from iteration 1 (its last checkpoint), to 3" in err
