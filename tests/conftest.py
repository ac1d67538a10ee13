"""Tests never load whatever third-party plugins happen to be installed, and leave the
process as they found it: torch's thread count and random state, Python's random state, the
environment and the working folder are restored after every test, so that no test's result
depends on which tests ran before it (a run with ``threads=1`` used to leave torch at one
thread for every later test)."""

from __future__ import annotations

import os

import pytest

os.environ["SELFPLAY_LOAD_PLUGINS"] = ""
os.environ.setdefault("SELFPLAY_PLOTS", "0")  # runs in tests skip their PNG plots (test_report)


@pytest.fixture(autouse=True)
def process_state():
    import random

    import torch

    threads, torch_rng, python_rng = (
        torch.get_num_threads(),
        torch.get_rng_state(),
        random.getstate(),
    )
    environment, folder = dict(os.environ), os.getcwd()
    yield
    torch.set_num_threads(threads)
    torch.set_rng_state(torch_rng)
    random.setstate(python_rng)
    if dict(os.environ) != environment:
        os.environ.clear()
        os.environ.update(environment)
    if os.getcwd() != folder:
        os.chdir(folder)


@pytest.fixture(autouse=True)
def fresh_plugins(monkeypatch):
    from selfplay.plugins import manager

    monkeypatch.setenv("SELFPLAY_LOAD_PLUGINS", "")
    manager.reset()
    yield
    manager.reset()


@pytest.fixture
def kill_at_iteration(tmp_path):
    """Start ``selfplay run ARGS`` in a process and SIGKILL it once ``iteration`` is
    checkpointed: in the next iteration, after its matches (ARGS run more iterations)."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    helper = Path(__file__).parent / "helpers" / "run_selfplay.py"

    def kill(args: list[str], iteration: int = 2, callbacks: tuple[str, ...] = ()) -> None:
        marker = tmp_path / f"stalled-{time.monotonic_ns()}"
        names = ", ".join(("test-stall", *callbacks))
        stall = {"SELFPLAY_TEST_STALL_AT": str(iteration), "SELFPLAY_TEST_MARKER": str(marker)}
        process = subprocess.Popen(
            [sys.executable, str(helper), "run", *args, "--set", f"callbacks=[{names}]"],
            env={**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "OMP_NUM_THREADS": "1", **stall},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.time() + 300
        while not marker.exists() and time.time() < deadline and process.poll() is None:
            time.sleep(0.1)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert marker.exists(), f"the run never went past iteration {iteration}"

    return kill
