"""What the fault suite's tests share: the CLI in a subprocess, and checks on its results."""

from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HELPER = Path(__file__).parent.parent / "helpers" / "run_selfplay.py"
TINY = [
    "--game", "tictactoe", "--matches", "8", "--cold-start", "5", "--seed", "11",
    "--set", "eval.matches=4", "--set", "checkpoint_every=1", "--set", "train.minibatch_size=16",
    "--set", "cold_start.batch_size=16",
]  # fmt: skip


def selfplay(
    *args: str, env: dict | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    """``selfplay ARGS`` with the test and fault plug-ins registered (tests/helpers)."""
    full_env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "OMP_NUM_THREADS": "1"}
    full_env.update(COLUMNS="2000", **(env or {}))  # one message, one line
    return subprocess.run(
        [sys.executable, str(HELPER), *args],
        env=full_env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def said(out: subprocess.CompletedProcess) -> str:
    """stderr with the console's line wrapping undone."""
    return re.sub(r"\s+", " ", out.stderr)


def fails_cleanly(out: subprocess.CompletedProcess, code: int, *phrases: str) -> None:
    """Exit ``code`` with a message holding every phrase, and no traceback."""
    assert out.returncode == code, out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    text = said(out)
    for phrase in phrases:
        assert phrase in text, f"{phrase!r} not in: {text[-2000:]}"


def losses(folder: Path) -> dict[int, str]:
    return column(folder, "loss")


def column(folder: Path, name: str) -> dict[int, str]:
    with (folder / "metrics.csv").open() as f:
        return {int(row["iteration"]): row[name] for row in csv.DictReader(f)}


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by relative path -> its SHA-256 (to prove nothing moved)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def mount_tmpfs(path: Path, size: str) -> bool:
    """Mount a tmpfs of ``size`` on ``path``; False where this machine does not allow it."""
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    return done.returncode == 0


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)
