"""The fault suite: faults injected through the real CLI, in a subprocess.

Each test asserts the exit code, the message, and that nothing earlier was lost. The fast
ones run with the rest of the suite; `pytest tests/faults -m slow` runs the long ones (SIGKILL
at 20 points, every damage and disk-full variant, a real tmpfs).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # kit.py, with --import-mode=importlib

from kit import TINY, mount_tmpfs, selfplay, unmount


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Two reference runs made once: ``two`` (2 iterations, a checkpoint after each) to damage
    in copies, and ``three`` (3 iterations straight) whose losses a resumed run must match."""
    root = tmp_path_factory.mktemp("reference")
    for name, n in (("two", "2"), ("three", "3")):
        out = selfplay("run", *TINY, "--iterations", n, "--out", str(root), "--name", name)
        assert out.returncode == 0, out.stderr
    return {"two": root / "two", "three": root / "three"}


@pytest.fixture
def run_copy(runs, tmp_path) -> Path:
    """A fresh copy of the 2-iteration run folder."""
    return Path(shutil.copytree(runs["two"], tmp_path / "run"))


@pytest.fixture
def small_disk(tmp_path):
    """``make(size) -> folder`` on a tmpfs of that size (unmounted afterwards), or a skip."""
    mounted: list[Path] = []

    def make(size: str) -> Path:
        where = tmp_path / f"disk-{len(mounted)}"
        if not mount_tmpfs(where, size):
            pytest.skip("mounting a tmpfs needs root (or CAP_SYS_ADMIN); not allowed here")
        mounted.append(where)
        return where

    yield make
    for where in mounted:
        unmount(where)
