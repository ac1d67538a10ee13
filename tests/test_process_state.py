"""Every test finds the process as the test before it found it: torch's thread count, the
environment and the working folder (tests/conftest.py restores them after each test)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

PAIR = """
import os
from pathlib import Path

import torch

THREADS_AT_IMPORT = torch.get_num_threads()
FOLDER_AT_IMPORT = os.getcwd()


def test_a_test_may_change_threads_environment_and_folder(tmp_path):
    torch.set_num_threads(1 if THREADS_AT_IMPORT > 1 else 2)
    os.environ["SELFPLAY_LEAK_CHECK"] = "1"
    os.chdir(tmp_path)


def test_the_next_test_finds_them_restored():
    assert "SELFPLAY_LEAK_CHECK" not in os.environ
    assert os.getcwd() == FOLDER_AT_IMPORT
    assert torch.get_num_threads() == THREADS_AT_IMPORT
"""


def run_pair(folder: Path) -> subprocess.CompletedProcess[str]:
    (folder / "test_pair.py").write_text(PAIR)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_pair.py"]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)


def test_a_test_that_changes_threads_environment_and_folder_leaves_the_next_one_unharmed(
    tmp_path,
):
    shutil.copy(Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
    out = run_pair(tmp_path)
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout[-2000:]


def test_without_the_restoring_fixture_the_pair_fails(tmp_path):
    """The pair can fail: with no conftest, the second test sees what the first one left."""
    out = run_pair(tmp_path)
    assert out.returncode == 1 and "1 failed, 1 passed" in out.stdout, out.stdout[-2000:]
