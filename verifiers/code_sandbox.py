"""Run untrusted Python code in a confined, killable child process.

NOT A SECURITY BOUNDARY. This keeps a model's honest mistakes and casual misbehaviour (infinite
loops, fork bombs, memory hogs, stray writes, reading the environment, opening sockets) from
harming the training run or the machine. A determined attacker with a kernel exploit, or one
who studies these defences, may get out. Run untrusted code from the internet in a VM or a
container built for it.

What one run gets:
- a fresh temporary folder as working directory, removed afterwards, and a scrubbed
  environment (no variable of the caller is passed on);
- ``python -I`` in a new session (its own process group), which the parent kills with SIGKILL
  at the wall-clock timeout and again after a normal exit, so no member is left behind;
- where ``unshare`` works without privileges: new user, network and PID namespaces (no
  network at all; every process of the run dies with it);
- resource limits, Landlock and a no-new-processes seccomp filter, set up by
  ``sandbox_child.py`` before the code runs (see there). Limits are set in the child rather
  than through ``preexec_fn``, which is unsafe when the caller has threads.

Where the machine lacks a mechanism (no unprivileged namespaces, a kernel without Landlock,
an architecture without the filter), that protection is missing; ``isolation()`` says which
ones this machine gives.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Literal

CHILD = Path(__file__).with_name("sandbox_child.py")
STARTUP_SECONDS = 30.0
OUTPUT_TAIL_CHARS = 2000
UNSHARE = ("unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child")
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 5.0
    cpu_seconds: int = 5
    memory_mb: int = 1024
    file_size_mb: int = 16
    open_files: int = 64
    max_tasks: int = 64  # threads and processes on top of what the user runs already
    allow_subprocesses: bool = False


@dataclass(frozen=True)
class RunResult:
    """``ok``: the run ended by itself (``completed`` says the tests finished); ``timeout``:
    killed at the wall clock or by the CPU limit; ``error``: the sandbox itself failed."""

    status: Literal["ok", "timeout", "error"]
    completed: bool = False
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    detail: str = ""


@cache
def namespaces_available() -> bool:
    """Whether ``unshare`` can make user, network and PID namespaces here without privileges."""
    if shutil.which("unshare") is None:
        return False
    try:
        probe = subprocess.run([*UNSHARE, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def isolation() -> dict[str, object]:
    """Which protections this machine gives a sandboxed run."""
    from selfplay.verifiers.sandbox_child import ARCHES, landlock_abi

    return {
        "namespaces": namespaces_available(),
        "landlock_abi": landlock_abi(),
        "seccomp": sys.platform == "linux" and platform.machine() in ARCHES,
    }


def run_sandboxed(
    program: str, tests: str = "", limits: Limits | None = None, python: str | None = None
) -> RunResult:
    """Run ``program`` then ``tests`` (in one namespace) in a fresh confined child process."""
    limits = limits or Limits()
    root = Path(tempfile.mkdtemp(prefix="selfplay-sandbox-"))
    try:
        return _run_in(root, program, tests, limits, python or sys.executable)
    finally:
        _remove(root)


def _run_in(root: Path, program: str, tests: str, limits: Limits, python: str) -> RunResult:
    work = root / "work"
    work.mkdir()
    (work / "program.py").write_text(program)
    (work / "tests.py").write_text(tests)
    read_end, write_end = os.pipe()
    config: dict[str, object] = {
        "program": str(work / "program.py"),
        "tests": str(work / "tests.py"),
        "status_fd": write_end,
        "limits": asdict(limits),
    }
    prefix = [*UNSHARE, "--"] if namespaces_available() else []
    config["user_namespace"] = bool(prefix)
    command = [*prefix, python, "-I", str(CHILD), json.dumps(config)]
    env = {**ENV, "HOME": str(work), "TMPDIR": str(work)}
    with open(root / "stdout", "wb") as out, open(root / "stderr", "wb") as err:
        try:
            process = subprocess.Popen(
                command,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                pass_fds=(write_end,),
            )
        except OSError as error:
            os.close(read_end)
            return RunResult("error", detail=f"could not start the sandbox: {error}")
        finally:
            os.close(write_end)
    try:
        status, messages, detail = _supervise(process, read_end, limits.wall_seconds)
    finally:
        _kill_group(process)
        os.close(read_end)
    stdout, stderr = _tail(root / "stdout"), _tail(root / "stderr")
    if status == "error":
        detail = f"{detail}; {stderr.strip().splitlines()[-1] if stderr.strip() else ''}"
    if process.returncode == -signal.SIGXCPU:
        status, detail = "timeout", f"CPU limit of {limits.cpu_seconds} s reached"
    completed = status == "ok" and "done" in messages and process.returncode == 0
    return RunResult(status, completed, process.returncode, stdout, stderr, detail)


def _supervise(
    process: subprocess.Popen, status_fd: int, wall_seconds: float
) -> tuple[Literal["ok", "timeout", "error"], str, str]:
    """Wait for "ready", then for the exit or the wall clock; the leader is not reaped here."""
    messages = ""
    deadline = time.monotonic() + STARTUP_SECONDS
    with selectors.DefaultSelector() as selector:
        selector.register(status_fd, selectors.EVENT_READ)
        while not _exited(process.pid):
            if time.monotonic() > deadline:
                if "ready" in messages:
                    return "timeout", messages, f"still running after {wall_seconds:g} s"
                return "error", messages, "the sandbox did not start in time"
            if not selector.get_map():
                time.sleep(0.02)
            elif selector.select(0.02):
                chunk = os.read(status_fd, 1024).decode(errors="replace")
                if not chunk:
                    selector.unregister(status_fd)
                elif "ready" not in messages and "ready" in chunk:
                    deadline = time.monotonic() + wall_seconds
                messages += chunk
        while selector.get_map() and selector.select(0):
            chunk = os.read(status_fd, 1024).decode(errors="replace")
            if not chunk:
                break
            messages += chunk
    if "ready" not in messages:
        return "error", messages, "the sandbox failed before running the code"
    return "ok", messages, ""


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it (its group id stays reserved)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_group(process: subprocess.Popen) -> None:
    """SIGKILL every process left in the run's group, then reap the leader."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _tail(path: Path) -> str:
    with open(path, "rb") as file:
        file.seek(max(0, path.stat().st_size - OUTPUT_TAIL_CHARS))
        return file.read().decode(errors="replace")


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
