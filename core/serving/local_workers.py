"""Rollout workers on this machine: ``rollout.workers=N`` starts N `selfplay serve` processes.

Each worker is ``selfplay serve RUN_DIR --rollout-worker --port 0 --threads T
--stop-with-stdin`` (and ``--learner NAME`` for a learner of several): it builds the run's
learner as the run does, listens on a free port (which it prints, and this
module reads), and takes the trainer's weights through the weight-transfer routes. The CPU
threads are split between the trainer and the workers in one place (core/machine/hardware.py).

No worker outlives the run: each holds the read end of a pipe from the trainer as its standard
input and exits when it closes (the trainer stopped, crashed or was killed with SIGKILL), and
on Linux it also gets SIGTERM when the trainer's process dies (``PR_SET_PDEATHSIG``). `stop`
closes the pipes, waits, and kills what is left.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from selfplay.core.serving.rollout_client import RolloutFailure

STARTUP_SECONDS = 300.0  # building a large model can take minutes
URL = re.compile(r"OpenAI-compatible API at (http://\S+/v1)")


class LocalWorkers:
    """``count`` `selfplay serve --rollout-worker` processes over run folder ``folder``."""

    def __init__(
        self,
        folder: Path,
        count: int,
        threads: int,
        cores: list[list[int]] | None = None,
        learner: str | None = None,
    ) -> None:
        self.folder, self.count, self.threads = Path(folder), count, threads
        self.cores = cores  # each worker's CPU cores (None: any)
        self.learner = learner  # in a run of several learners, the one they serve
        self.processes: list[subprocess.Popen] = []
        self.urls: list[str] = []

    def start(self) -> list[str]:
        """Start every worker; their ``openai:URL#learner`` names, once each listens."""
        for index in range(self.count):
            self.processes.append(self._spawn(index))
        try:
            for index, process in enumerate(self.processes):
                self.urls.append(self._url(index, process))
        except BaseException:
            self.stop()
            raise
        return [f"openai:{url}#learner" for url in self.urls]

    def _spawn(self, index: int) -> subprocess.Popen:
        command = [sys.executable, "-m", "selfplay.core.commands.cli", "serve", str(self.folder)]
        command += ["--rollout-worker", "--port", "0", "--threads", str(self.threads)]
        command += ["--stop-with-stdin"]
        if self.learner is not None:
            command += ["--learner", self.learner]
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads or 1)}
        log = self._log(index).open("ab")
        return subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            preexec_fn=_prepare(self.cores[index] if self.cores else None),
        )

    def _url(self, index: int, process: subprocess.Popen) -> str:
        """Read the worker's output until it names its address (or it dies, or time runs out)."""
        found: list[str] = []

        def read() -> None:
            assert process.stdout is not None
            for raw in iter(process.stdout.readline, b""):
                match = URL.search(raw.decode("utf-8", errors="replace"))
                if match:
                    found.append(match.group(1))
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(STARTUP_SECONDS)
        if not found:
            log = self._log(index)
            tail = log.read_text(errors="replace")[-600:] if log.exists() else ""
            state = "exited" if process.poll() is not None else "did not start in time"
            raise RolloutFailure(
                f"Rollout worker {index} {state} ({log}): {tail.strip() or 'no output'}"
            )
        return found[0]

    def _log(self, index: int) -> Path:
        """rollout/worker-N.log (rollout/NAME/worker-N.log for learner NAME's workers)."""
        return self.folder / "rollout" / (self.learner or "") / f"worker-{index}.log"

    def stop(self) -> None:
        for process in self.processes:
            if process.stdin is not None and not process.stdin.closed:
                process.stdin.close()
        deadline = time.monotonic() + 10
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []


def _prepare(cores: list[int] | None) -> Callable[[], None] | None:
    """What the child runs before exec: its cores, and (Linux) SIGTERM when the parent dies."""
    if sys.platform != "linux" and cores is None:
        return None

    def prepare() -> None:
        if cores is not None:
            os.sched_setaffinity(0, cores)
        if sys.platform == "linux":
            try:
                libc = ctypes.CDLL("libc.so.6", use_errno=True)
                libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
            except OSError:
                pass  # the pipe on standard input still ends the worker

    return prepare
