"""A killable worker process: run a function with a timeout that works from any thread.

The function runs in a child interpreter (``python -m selfplay.verifiers.worker module:func``)
that reads one JSON list of arguments per line and answers one JSON line. The parent waits on
the pipe with a deadline, never on a signal, so a timeout works from any thread, and nothing
about the caller's ``__main__`` is re-imported. Its hash seed is fixed (``HASH_SEED``), so a
call gives the same answer in the same time under any hash seed of the caller. On timeout
the worker is killed and its successor is started at once, so it warms up while the caller
moves on. Calls are serialised by a lock; use one worker per thread for parallel checks.

Also here, for the code sandbox's run folders: ``discard`` renames a folder away and deletes it
on a background thread, so the verdict never waits for a program's leftovers.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import queue
import resource
import selectors
import shutil
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

STARTUP_SECONDS = 120.0  # importing sympy on a busy machine can take a while
# The worker's hash seed is fixed: sympy's choices (the order of a set of terms, and so which
# path a simplification takes and how long it runs) follow set iteration order, which the
# seed decides. A result, and its cost, must not depend on the caller's PYTHONHASHSEED.
HASH_SEED = "0"
MAX_LINE_BYTES = 1 << 20

Outcome = Literal["ok", "timeout", "error"]


@dataclass(frozen=True, slots=True)
class Result:
    outcome: Outcome
    value: Any = None
    detail: str = ""


class Worker:
    """Runs ``target`` (``"module:function"``) in a killable child process."""

    def __init__(self, target: str, memory_mb: int = 2048) -> None:
        self.target = target
        self.memory_mb = memory_mb
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._ready = False

    def start(self) -> None:
        """Start the process (if needed) and wait until it has imported its function."""
        with self._lock:
            self._ensure_ready()

    def call(self, args: list[Any], timeout: float) -> Result:
        with self._lock:
            try:
                self._ensure_ready()
            except Exception as err:
                self._kill()
                return Result("error", detail=f"worker could not start: {err}")
            return self._call(args, timeout)

    def close(self) -> None:
        with self._lock:
            self._kill()

    def _call(self, args: list[Any], timeout: float) -> Result:
        try:
            self._send(args)
            line = self._read_line(timeout)
        except OSError as err:
            self._restart()
            return Result("error", detail=f"worker died: {type(err).__name__}: {err}")
        if line is None:
            self._restart()
            return Result("timeout", detail=f"no answer within {timeout:g} s")
        try:
            kind, value = json.loads(line)
        except ValueError:
            self._restart()
            return Result("error", detail="worker answered something unreadable")
        if kind != "ok":
            return Result("error", detail=str(value))
        return Result("ok", value)

    def _send(self, args: list[Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(json.dumps(args).encode() + b"\n")
        self._process.stdin.flush()

    def _read_line(self, timeout: float) -> bytes | None:
        """One line from the worker, None after ``timeout`` s; OSError if the worker died."""
        assert self._process is not None and self._process.stdout is not None
        stream = self._process.stdout
        deadline = time.monotonic() + timeout
        buffer = b""
        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            while not buffer.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    return None
                chunk = os.read(stream.fileno(), 65536)
                if not chunk or len(buffer) > MAX_LINE_BYTES:
                    raise OSError("the worker closed its output")
                buffer += chunk
        return buffer

    def _spawn(self) -> None:
        command = [sys.executable, "-m", __name__, self.target, str(self.memory_mb)]
        env = {**os.environ, "PYTHONHASHSEED": HASH_SEED}
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._ready = False

    def _ensure_ready(self) -> None:
        if self._process is None or self._process.poll() is not None:
            self._kill()
            self._spawn()
        if self._ready:
            return
        line = self._read_line(STARTUP_SECONDS)
        if line is None or json.loads(line) != ["ready", None]:
            raise RuntimeError(f"no ready message within {STARTUP_SECONDS:g} s")
        self._ready = True

    def _restart(self) -> None:
        """Kill a stuck or dead worker and start its successor at once (it warms up meanwhile)."""
        self._kill()
        try:
            self._spawn()
        except OSError:
            self._process = None  # the next call reports the failure as an error

    def _kill(self) -> None:
        process, self._process, self._ready = self._process, None, False
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


def serve(target: str, memory_mb: int) -> None:
    """The worker's loop: one JSON argument list per input line, one JSON answer per line."""
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    module_name, _, func_name = target.partition(":")
    func = getattr(importlib.import_module(module_name), func_name)
    out = sys.stdout
    out.write(json.dumps(["ready", None]) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            answer = ["ok", func(*json.loads(line))]
        except MemoryError:
            answer = ["raised", "MemoryError: the computation needed too much memory"]
        except Exception as err:
            answer = ["raised", f"{type(err).__name__}: {err}"]
        out.write(json.dumps(answer) + "\n")
        out.flush()


# ---- deleting run folders off the verdict's path (the code sandbox's) -------------------------

_TRASH: queue.Queue[Path] = queue.Queue()
_CLEANER: list[threading.Thread] = []
CLEANUP_AT_EXIT_SECONDS = 5.0


def discard(root: Path) -> None:
    """Rename the run folder away (instant) and delete it on a background thread."""
    trash = root.with_name(f"selfplay-trash-{uuid.uuid4().hex}")
    try:
        root.rename(trash)
    except OSError:
        trash = root
    _TRASH.put(trash)
    if not _CLEANER:
        cleaner = threading.Thread(target=_clean_forever, name="sandbox-cleanup", daemon=True)
        _CLEANER.append(cleaner)
        cleaner.start()
        atexit.register(wait_for_cleanup, CLEANUP_AT_EXIT_SECONDS)


def wait_for_cleanup(timeout: float = 60.0) -> bool:
    """Wait until every discarded folder is gone (at most ``timeout`` s); True if they are."""
    deadline = time.monotonic() + timeout
    while _TRASH.unfinished_tasks and time.monotonic() < deadline:
        time.sleep(0.01)
    return not _TRASH.unfinished_tasks


def _clean_forever() -> None:
    while True:
        folder = _TRASH.get()
        try:
            _remove(folder)
        finally:
            _TRASH.task_done()


def _remove(root: Path) -> None:
    """Delete the run folder even where the code removed permissions from its files."""

    def unlock(func, path, _exc):
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
        func(path)

    try:
        shutil.rmtree(root, onerror=unlock)
    except OSError:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
