"""Run untrusted Python in a confined, killable child process and bring back plain values.

Threat model. The program is written by the policy being trained, and RL finds whatever the
checker lets through, so we assume a program that tries everything it can to be judged
correct without being correct, and that knows this code. Two different things are defended:

1. The verdict. A program must never be able to report its own pass. The child process that
   runs it cannot be trusted with anything once the program starts: the program can write
   to any descriptor it holds (the results pipe, found by scanning fds or reading argv),
   patch the harness's functions, ``assert``, comparisons or ``__eq__`` of what it returns,
   print fake markers, or leave by ``os._exit(0)`` or ``SystemExit(0)``. So the child decides
   nothing. It only runs the calls it is given and reports, per call, the value returned in
   the tagged plain form of ``code_values``; the parent decodes that strictly into builtin
   values (no object of the program's survives the trip) and compares them, itself, with
   expected values that never enter the sandbox (``code_tests``). Whatever the program makes
   the child say is at most "these calls returned these plain values", which a correct
   program would say honestly: forging a pass requires knowing the expected values. Exit
   codes, output and markers mean nothing; a missing or unreadable report fails every call.
   The expected values stay secret as long as the program cannot read the parent's memory
   or files: Landlock (below) denies it ``/proc``, ``ptrace`` of processes outside its own
   domain and every file outside the interpreter and system folders. Files inside those
   folders stay readable, so a package installed there (this one too, as a wheel, with its
   seed banks) is visible: a bank's held-out tasks are not secret from a program, which
   matters for evaluation only, never for a training reward. Where Landlock is missing, a
   program may read any file the user can (a task bank, a run folder).
2. The machine. NOT A SECURITY BOUNDARY against a determined attacker with a kernel exploit:
   these defences keep honest mistakes and misbehaviour (infinite loops, fork bombs, memory
   hogs, stray writes, reading the environment, opening sockets) from harming the run or
   the machine. Run untrusted code from the internet in a VM or a container built for it.

What one run gets:
- a fresh temporary folder as working directory and a scrubbed environment (no variable of
  the caller is passed on). Afterwards the folder is renamed away at once and deleted in the
  background, so a program that leaves 100,000 files cannot delay its verdict;
- ``python -I`` in a new session (its own process group). At the wall-clock timeout, and
  after a normal exit, the namespace's init process is killed first (so ``unshare``, its
  parent, reaps it and no zombie is left), then the whole group;
- where ``unshare`` works without privileges: new user, network and PID namespaces (no
  network at all; every process of the run dies with it);
- resource limits, Landlock and a no-new-processes seccomp filter, set up by
  ``sandbox_child.py`` before the code runs (see there). Limits are set in the child rather
  than through ``preexec_fn``, which is unsafe when the caller has threads.
- its output, stripped of terminal control codes (``printable``), last 2000 characters.

Where the machine lacks a mechanism (no unprivileged namespaces, a kernel without Landlock,
an architecture without the filter), that protection is missing; ``isolation()`` says which
ones this machine gives.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import platform
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from selfplay.api.verifier import printable
from selfplay.verifiers import code_values

CHILD = Path(__file__).with_name("sandbox_child.py")
STARTUP_SECONDS = 30.0
REAP_SECONDS = 2.0
OUTPUT_TAIL_CHARS = 2000
MAX_REPORT_BYTES = 4 << 20
UNSHARE = ("unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child")
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
Kind = Literal["ok", "raised", "unencodable", "missing"]


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
class Call:
    """``function(*args, **kwargs)``, with plain-value arguments."""

    function: str
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CallOutcome:
    """What one call gave: ``ok`` (its plain ``value``), ``raised`` or ``unencodable`` (with a
    ``detail``), or ``missing`` (the run ended, or its report was unreadable, before it)."""

    kind: Kind
    value: Any = None
    detail: str = ""


@dataclass(frozen=True)
class RunResult:
    """``ok``: the run ended by itself (``outcomes``, one per call, say what each gave);
    ``timeout``: killed at the wall clock or by the CPU limit; ``error``: the sandbox itself
    failed before the program ran (never the program's doing)."""

    status: Literal["ok", "timeout", "error"]
    outcomes: tuple[CallOutcome, ...] = ()
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


def run_calls(
    program: str, calls: Sequence[Call], limits: Limits | None = None, python: str | None = None
) -> RunResult:
    """Run ``program``, then each call, in a fresh confined child; the values come back."""
    limits = limits or Limits()
    root = Path(tempfile.mkdtemp(prefix="selfplay-sandbox-"))
    try:
        return _run_in(root, program, list(calls), limits, python or sys.executable)
    finally:
        discard(root)


def _run_in(root: Path, program: str, calls: list[Call], limits: Limits, python: str) -> RunResult:
    work = root / "work"
    work.mkdir()
    (work / "program.py").write_text(program)
    wire = [
        [c.function, code_values.encode(tuple(c.args)), code_values.encode(c.kwargs)] for c in calls
    ]
    (work / "calls.json").write_text(json.dumps(wire))
    read_end, write_end = os.pipe()
    prefix = [*UNSHARE, "--"] if namespaces_available() else []
    config = {
        "program": str(work / "program.py"),
        "calls": str(work / "calls.json"),
        "results_fd": write_end,
        "limits": asdict(limits),
        "user_namespace": bool(prefix),
    }
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
        status, report, detail = _supervise(process, read_end, limits.wall_seconds)
    finally:
        _stop(process, namespaced=bool(prefix))
        os.close(read_end)
    return _result(root, process, status, report, detail, calls, limits)


def _result(
    root: Path,
    process: subprocess.Popen,
    status: str,
    report: bytes,
    detail: str,
    calls: list[Call],
    limits: Limits,
) -> RunResult:
    stdout, stderr = _tail(root / "stdout"), _tail(root / "stderr")
    if status == "error":
        last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        detail = f"{detail}; {last}" if last else detail
    if process.returncode == -signal.SIGXCPU:
        status, detail = "timeout", f"CPU limit of {limits.cpu_seconds} s reached"
    outcomes = read_report(report, len(calls)) if status == "ok" else ()
    return RunResult(status, outcomes, process.returncode, stdout, stderr, printable(detail))


def read_report(report: bytes, expected_calls: int) -> tuple[CallOutcome, ...]:
    """The outcome of every call from the child's last ``results`` line; untrusted data, so
    anything malformed or missing makes the calls concerned ``missing``."""
    missing = CallOutcome("missing", detail="the program ended before reporting this call")
    lines = [line for line in report.split(b"\n") if line.startswith(b"results ")]
    if not lines:
        return (missing,) * expected_calls
    try:
        entries = json.loads(lines[-1][len(b"results ") :])["calls"]
        if type(entries) is not list:
            raise ValueError("not a list")
    except (ValueError, TypeError, KeyError, RecursionError):
        unreadable = CallOutcome("missing", detail="the program's report is unreadable")
        return (unreadable,) * expected_calls
    outcomes = [_outcome(entry) for entry in entries[:expected_calls]]
    return tuple(outcomes) + (missing,) * (expected_calls - len(outcomes))


def _outcome(entry: Any) -> CallOutcome:
    if (
        type(entry) is not list
        or len(entry) != 2
        or entry[0] not in ("ok", "raised", "unencodable")
    ):
        return CallOutcome("missing", detail="the program's report is unreadable")
    kind, payload = entry
    if kind != "ok":
        text = payload if type(payload) is str else "?"
        return CallOutcome(kind, detail=printable(text[:300]))
    try:
        return CallOutcome("ok", code_values.decode(payload))
    except ValueError as err:
        return CallOutcome("unencodable", detail=f"the value is not plain data: {err}")


def _supervise(
    process: subprocess.Popen, report_fd: int, wall_seconds: float
) -> tuple[Literal["ok", "timeout", "error"], bytes, str]:
    """Wait for "ready", then for the exit or the wall clock, draining the report pipe.

    The leader is not reaped here, so its process group id stays reserved for the kill."""
    report = bytearray()
    ready = False
    deadline = time.monotonic() + STARTUP_SECONDS
    open_pipe = True
    while not _exited(process.pid):
        if time.monotonic() > deadline:
            if ready:
                return "timeout", bytes(report), f"still running after {wall_seconds:g} s"
            return "error", bytes(report), "the sandbox did not start in time"
        if open_pipe:
            open_pipe = _drain(report_fd, report, 0.02)
        else:
            time.sleep(0.02)
        if not ready and report.startswith(b"ready") and b"\n" in report:
            ready, deadline = True, time.monotonic() + wall_seconds
    while open_pipe and _drain(report_fd, report, 0):
        pass
    if not (report.startswith(b"ready") and b"\n" in report):
        return "error", bytes(report), "the sandbox failed before running the code"
    return "ok", bytes(report), ""


def _drain(fd: int, report: bytearray, wait: float) -> bool:
    """Read what the pipe holds into ``report`` (up to its cap); False once it is closed."""
    readable, _, _ = select.select([fd], [], [], wait)
    if not readable:
        return True
    chunk = os.read(fd, 1 << 16)
    if not chunk:
        return False
    if len(report) < MAX_REPORT_BYTES:
        report.extend(chunk[: MAX_REPORT_BYTES - len(report)])
    return True


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it (its group id stays reserved)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _stop(process: subprocess.Popen, namespaced: bool) -> None:
    """Kill the namespace's init first, so ``unshare`` reaps it; then the group; reap."""
    if namespaced and not _exited(process.pid):
        for child in _children(process.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
        deadline = time.monotonic() + REAP_SECONDS
        while not _exited(process.pid) and time.monotonic() < deadline:
            time.sleep(0.002)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _tail(path: Path) -> str:
    with open(path, "rb") as file:
        file.seek(max(0, path.stat().st_size - OUTPUT_TAIL_CHARS))
        return printable(file.read().decode(errors="replace"))


# ---- cleanup off the verdict's path ---------------------------------------------------------

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
