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
   domain, every file outside the interpreter and system folders, and every file of this
   package wherever it is installed (editable, or a wheel inside those folders): its code and
   its data, such as the code-task bank. Where Landlock is missing, a program may read any
   file the user can (a task bank, a run folder).
   The parent's own work is bounded too: the report is read only until the deadline (a
   process the program left behind holding the pipe is killed, not waited for), and
   decoding it is capped in size and time (``code_values``), counted against the limit.
2. The machine. NOT A SECURITY BOUNDARY against a determined attacker with a kernel exploit:
   these defences keep honest mistakes and misbehaviour (infinite loops, fork bombs, memory
   hogs, stray writes, reading the environment, opening sockets) from harming the run or
   the machine. Run untrusted code from the internet in a VM or a container built for it.

What one run gets:
- a fresh temporary folder as working directory and a scrubbed environment (no variable of
  the caller is passed on; ``PYTHONHASHSEED`` only where ``hash_seed`` is given), holding at
  most ``disk_mb`` MiB in all: a tmpfs of that size in the run's own mount namespace, or,
  without namespaces, a watch that stops the run once the folder, with the files its
  processes hold open without a name, grows past it (approximate: it looks every
  ``WATCH_SECONDS``). Storage no folder shows (memfd, System V shared memory and message
  queues, POSIX message queues) is refused by the filter and limits. Afterwards the
  folder is renamed away at once and deleted in the background, so a program that leaves
  100,000 files cannot delay its verdict;
- ``python -s`` in a new session (its own process group), its environment holding only
  what ``ENV`` sets (``-I`` would ignore the hash seed). At the wall-clock timeout, and
  after a normal exit, the namespace's init process is killed first (so ``unshare``, its
  parent, reaps it and no zombie is left), then the whole group;
- where ``unshare`` works without privileges: new user, mount, network, PID and IPC
  namespaces (no network at all; every process and IPC object of the run dies with it).
  Without them, once the child has exited or the time is up, every process still holding
  the results pipe is killed;
- resource limits, Landlock and a seccomp filter (no hidden storage, no mounts, no sockets
  or other routes to processes outside, and unless allowed no new processes), set up by
  ``sandbox/child.py`` before the code runs (see ``sandbox/confine.py``). Limits are set in the
  child rather than through ``preexec_fn``, which is unsafe when the caller has threads.
- its output, stripped of terminal control codes (``printable``), last 2000 characters.

Where the machine lacks a mechanism (no unprivileged namespaces, a kernel without Landlock,
an architecture without the filter), that protection is missing; ``isolation()`` says which
ones this machine gives.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from selfplay.api.verifier import printable
from selfplay.verifiers import code_values
from selfplay.verifiers.code_values import CallOutcome, read_report
from selfplay.verifiers.sandbox.confine import MAX_WATCHED_FILES, children, over_disk
from selfplay.verifiers.worker import discard, wait_for_cleanup

__all__ = [
    "Call",
    "CallOutcome",
    "Limits",
    "RunResult",
    "discard",
    "isolation",
    "namespaces_available",
    "read_report",
    "run_calls",
    "wait_for_cleanup",
]

CHILD = Path(__file__).parent / "sandbox" / "child.py"
STARTUP_SECONDS = 30.0
REAP_SECONDS = 2.0
OUTPUT_TAIL_CHARS = 2000
MAX_REPORT_BYTES = 4 << 20
WATCH_SECONDS = 0.05
DECODE_GRACE = 0.05  # share of the wall limit the parent may add to decode the report
PACKAGE = Path(__file__).resolve().parents[1]  # hidden from the program (code and data)
UNSHARE = ("unshare", "--user", "--map-root-user", "--mount", "--net", "--pid", "--ipc")
UNSHARE = (*UNSHARE, "--fork", "--kill-child")
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
# ``python -I`` would ignore PYTHONHASHSEED, so the child runs as ``python -s`` with these in an
# environment that holds nothing else: no user site folder, no script folder on sys.path.
ENV |= {"PYTHONSAFEPATH": "1"}


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 5.0
    cpu_seconds: int = 5
    memory_mb: int = 1024
    file_size_mb: int = 16
    disk_mb: int = 64  # all files of the run together
    open_files: int = 64
    max_tasks: int = 64  # threads and processes on top of what the user runs already
    allow_subprocesses: bool = False
    fake_clock: float | None = None  # the clocks start at this moment (seconds since 1970)
    hash_seed: int | None = None  # PYTHONHASHSEED of the run (None: random, Python's default)


@dataclass(frozen=True)
class Call:
    """``function(*args, **kwargs)``, with plain-value arguments."""

    function: str
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


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
    from selfplay.verifiers.sandbox.confine import ARCHES, landlock_abi

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
        "hidden": [str(PACKAGE)],
    }
    command = [*prefix, python, "-s", str(CHILD), json.dumps(config)]
    env = {**ENV, "HOME": str(work), "TMPDIR": str(work)}
    if limits.hash_seed is not None:
        env["PYTHONHASHSEED"] = str(limits.hash_seed)
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
    watch = None if prefix else (work, limits.disk_mb, process.pid)
    try:
        status, report, detail, deadline = _supervise(process, read_end, limits, watch)
    finally:
        _stop(process, namespaced=bool(prefix))
        if not prefix:
            _kill_holders(read_end)
        os.close(read_end)
    deadline += DECODE_GRACE * limits.wall_seconds
    return _result(root, process, (status, report, detail, deadline), calls, limits)


def _result(
    root: Path, process: subprocess.Popen, supervised: tuple, calls: list[Call], limits: Limits
) -> RunResult:
    status, report, detail, deadline = supervised
    stdout, stderr = _tail(root / "stdout"), _tail(root / "stderr")
    if status == "error":
        last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        detail = f"{detail}; {last}" if last else detail
    if process.returncode == -signal.SIGXCPU:
        status, detail = "timeout", f"CPU limit of {limits.cpu_seconds} s reached"
    outcomes: tuple[CallOutcome, ...] = ()
    if status == "ok":
        try:
            outcomes = read_report(report, len(calls), deadline)
        except code_values.DecodeTimeout as err:
            status, detail = "timeout", str(err)
    if status == "disk":
        status, outcomes = "ok", (CallOutcome("missing", detail=detail),) * len(calls)
    return RunResult(status, outcomes, process.returncode, stdout, stderr, printable(detail))


def _supervise(
    process: subprocess.Popen, report_fd: int, limits: Limits, watch: tuple | None
) -> tuple[str, bytes, str, float]:
    """Wait for "ready", then for the exit or the wall clock, draining the report pipe; the
    status, the report, a detail and the deadline. Nothing is waited for past the deadline,
    nor after the child's exit beyond what the pipe holds then: a process the program left
    behind cannot hold the verdict back. The leader is not reaped here, so its process group
    id stays reserved for the kill."""
    report = bytearray()
    ready = False
    deadline = time.monotonic() + STARTUP_SECONDS
    open_pipe, next_watch = True, 0.0
    while not _exited(process.pid):
        now = time.monotonic()
        if now > deadline:
            if ready:
                return (
                    "timeout",
                    bytes(report),
                    f"still running after {limits.wall_seconds:g} s",
                    deadline,
                )
            return "error", bytes(report), "the sandbox did not start in time", deadline
        if watch is not None and ready and now >= next_watch:
            next_watch = now + WATCH_SECONDS
            if over_disk(*watch):
                why = f"the program wrote more than {watch[1]} MiB or {MAX_WATCHED_FILES} files"
                return "disk", bytes(report), why, deadline
        if open_pipe:
            open_pipe = _drain(report_fd, report, 0.02)
        else:
            time.sleep(0.02)
        if not ready and report.startswith(b"ready") and b"\n" in report:
            ready, deadline = True, time.monotonic() + limits.wall_seconds
    while open_pipe and time.monotonic() < deadline and _drain(report_fd, report, 0, once=True):
        pass
    if not (report.startswith(b"ready") and b"\n" in report):
        return "error", bytes(report), "the sandbox failed before running the code", deadline
    return "ok", bytes(report), "", deadline


def _drain(fd: int, report: bytearray, wait: float, once: bool = False) -> bool:
    """Read what the pipe holds into ``report`` (up to its cap); False once it is closed, or
    (``once``) once it holds nothing more right now."""
    readable, _, _ = select.select([fd], [], [], wait)
    if not readable:
        return not once
    chunk = os.read(fd, 1 << 16)
    if not chunk:
        return False
    if len(report) < MAX_REPORT_BYTES:
        report.extend(chunk[: MAX_REPORT_BYTES - len(report)])
    return True


def _kill_holders(read_end: int) -> None:
    """Kill every other process that holds the results pipe (a detached grandchild)."""
    if select.select([read_end], [], [], 0)[0] and not os.read(read_end, 1 << 16):
        return  # closed: nobody holds it
    pipe = f"pipe:[{os.fstat(read_end).st_ino}]"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            held = any(
                os.readlink(f"/proc/{pid}/fd/{fd}") == pipe for fd in os.listdir(f"/proc/{pid}/fd")
            )
        except OSError:
            continue
        if held:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(pid), signal.SIGKILL)


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
        for child in children(process.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(child, signal.SIGKILL)
        deadline = time.monotonic() + REAP_SECONDS
        while not _exited(process.pid) and time.monotonic() < deadline:
            time.sleep(0.002)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _tail(path: Path) -> str:
    with open(path, "rb") as file:
        file.seek(max(0, path.stat().st_size - OUTPUT_TAIL_CHARS))
        return printable(file.read().decode(errors="replace"))
