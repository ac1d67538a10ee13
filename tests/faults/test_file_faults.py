"""Damaged files and full or read-only disks: exit 2 or 4 with a message, never a traceback,
never a lost checkpoint, and a resume afterwards that ends where the straight run ends."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from kit import TINY, fails_cleanly, losses, said, selfplay

from selfplay.core.run.folder import checkpoint


def zero_the_newest(folder) -> None:
    (folder / "checkpoints" / "iter-000002" / "state.ckpt").write_bytes(b"")


@pytest.mark.parametrize("command", ["play", pytest.param("eval", marks=pytest.mark.slow)])
def test_a_zero_byte_checkpoint_folder_is_exit_4_naming_it(run_copy, command):
    zero_the_newest(run_copy)
    out = selfplay(command, str(run_copy / "checkpoints" / "iter-000002"))
    fails_cleanly(out, 4, "iter-000002 is damaged", "state.ckpt is 0 bytes")


def test_eval_of_a_run_folder_passes_over_a_damaged_newest_checkpoint(run_copy):
    zero_the_newest(run_copy)
    (run_copy / "checkpoints" / "latest").unlink()
    out = selfplay("eval", str(run_copy), "--matches", "2", "--json")
    assert out.returncode == 0, out.stderr
    assert "passing over damaged checkpoints" in said(out) and "iter-000001" in out.stdout


def test_play_of_a_run_whose_pointer_is_missing_uses_the_newest_checkpoint(run_copy):
    (run_copy / "checkpoints" / "latest").unlink()
    out = selfplay("play", str(run_copy))  # no input: it asks for a move, then stops
    assert "no checkpoint yet" not in said(out) and "Traceback" not in out.stderr
    assert "iter-000002" in out.stdout + out.stderr


BROKEN, EMPTY, LIST = "game: [unclosed\n", "", "- just\n- a list\n"
CORRUPT = [("resume", BROKEN), ("play", BROKEN)]
CORRUPT += [
    pytest.param(c, t, marks=pytest.mark.slow)
    for c, t in [("eval", BROKEN), ("resume", EMPTY), ("play", EMPTY), ("eval", EMPTY)]
    + [(c, LIST) for c in ("resume", "play", "eval")]
]


@pytest.mark.parametrize(("command", "text"), CORRUPT)
def test_a_corrupt_config_yaml_is_exit_2_with_the_copy_to_restore(run_copy, runs, command, text):
    (run_copy / "config.yaml").write_text(text)
    if command == "resume":
        out = selfplay("run", "--resume", str(run_copy), "--iterations", "3")
    else:
        out = selfplay(command, str(run_copy))
    fails_cleanly(out, 2, "config.yaml", "keeps a copy: cp")
    if command == "resume" and text.startswith("game"):  # the printed fix works
        copy = run_copy / "checkpoints" / "iter-000002" / "config.yaml"
        assert f"cp {copy} {run_copy / 'config.yaml'}" in said(out)
        shutil.copy(copy, run_copy / "config.yaml")
        again = selfplay("run", "--resume", str(run_copy), "--iterations", "3")
        assert again.returncode == 0, again.stderr
        assert losses(run_copy) == losses(runs["three"])


def test_an_empty_model_folder_is_exit_2_naming_what_it_lacks(tmp_path):
    (tmp_path / "model").mkdir()
    out = selfplay("run", "--model", str(tmp_path / "model"), "--out", str(tmp_path / "runs"))
    fails_cleanly(out, 2, "not a Hugging Face model folder", "config.json", "the tokenizer")
    assert "sentencepiece" not in out.stderr and not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "point",
    [
        "checkpoint",
        pytest.param("episodes", marks=pytest.mark.slow),
        pytest.param("metrics", marks=pytest.mark.slow),
    ],
)
def test_a_disk_that_fills_up_mid_run_is_exit_4_and_loses_nothing(tmp_path, runs, point):
    # RLIMIT_FSIZE stands in for a full disk (no mount needed): every write beyond the
    # limit fails, like a write to a full file system, from iteration 2 on
    out = selfplay(
        "run", *TINY, "--set", "callbacks=[test-disk-full]", "--iterations", "3",
        "--out", str(tmp_path), "--name", "f", env={"SELFPLAY_TEST_DISK_FULL": f"2:{point}"},
    )  # fmt: skip
    folder = tmp_path / "f"
    written = {"checkpoint": "checkpoints/iter-000002", "episodes": "episodes.jsonl"}
    fails_cleanly(out, 4, "Cannot write", written.get(point, "metrics.csv"), "iter-000001")
    assert checkpoint.latest(folder).name == "iter-000001"
    assert not list((folder / "checkpoints").glob(".tmp-*"))  # the partial write is gone
    resumed = selfplay("run", "--resume", str(folder), "--iterations", "3")
    assert resumed.returncode == 0, resumed.stderr
    assert losses(folder) == losses(runs["three"])


@pytest.mark.slow
def test_a_real_full_disk_leaves_no_partial_checkpoint(tmp_path, runs, small_disk):
    disk = small_disk("20m")  # room for one 14 MB checkpoint, not for two
    out = selfplay("run", *TINY, "--iterations", "3", "--out", str(disk), "--name", "f")
    fails_cleanly(out, 4, "No space left on device", "iter-000001")
    folder = disk / "f"
    assert [p.name for p in (folder / "checkpoints").iterdir() if p.is_dir()] == ["iter-000001"]
    moved = shutil.copytree(folder, tmp_path / "moved")  # to a disk with room
    resumed = selfplay("run", "--resume", str(moved), "--iterations", "3")
    assert resumed.returncode == 0, resumed.stderr
    assert losses(moved) == losses(runs["three"])


def read_only(folder, small_disk) -> None:
    """Make ``folder`` read-only: a read-only tmpfs when root, else permission bits."""
    if os.geteuid() != 0:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        return
    disk = small_disk("64m")
    shutil.copytree(folder, disk / "run")
    shutil.rmtree(folder)
    folder.symlink_to(disk / "run")
    done = subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot remount a tmpfs read-only here: {done.stderr.decode().strip()}")


def test_resuming_a_read_only_run_folder_is_exit_4_and_changes_nothing(run_copy, small_disk):
    read_only(run_copy, small_disk)
    before = sorted(p.name for p in run_copy.iterdir())
    out = selfplay("run", "--resume", str(run_copy), "--iterations", "3")
    fails_cleanly(out, 4, "Cannot write", "metrics.csv")
    assert sorted(p.name for p in run_copy.iterdir()) == before
