"""The child side of the code sandbox: confine this process, run the program, report values.

Started by ``code_sandbox.run_calls`` as ``python -s sandbox/child.py CONFIG_JSON``, in its own
session, in a fresh working directory, with a scrubbed environment (``PYTHONHASHSEED`` set
where the run asks for a hash seed). It uses only the standard library and its siblings
``confine.py`` and ``clocks.py``, loaded from its folder before confinement
(it must not import the package, which is not readable once confined).

In order, before any untrusted code runs (the confinements are in ``confine.py``):
1. the program and the calls to make are read from the working directory;
2. in a user and mount namespace: an empty tmpfs of ``disk_mb`` MiB is mounted over the
   working directory, the total disk cap of a run;
3. resource limits (address space, CPU seconds, file size, open files, tasks, no core files,
   no POSIX message queues);
4. Landlock, where the kernel has it: reading only the Python installation and system
   folders minus this package, writing only the working directory, no TCP, no signals out;
5. a seccomp filter: no storage outside the working directory (memfd, System V IPC),
   no mounts, no sockets but a connected stream pair, no inotify, no io_uring, and, unless
   subprocesses are allowed, no new processes (threads still work);
6. with ``fake_clock``, every clock of the standard library starts at that moment
   (``clocks.py``): two runs set at different moments show a program whose result
   depends on the time;
7. "ready" is written to the results pipe. Only then does the program run; then each call
   ``function(*args, **kwargs)``, and one ``results`` line reports, per call, the value it
   returned (in the tagged form of ``code_values``) or the exception it raised.

Nothing here decides a verdict. Once the program runs it owns this process: it may write to
the pipe, patch this file's functions or exit at any moment, so everything it can make this
process say is treated by the parent as untrusted data, which only ever amounts to "these
calls returned these plain values". Expected values never enter this process.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import traceback

MIB = 1024 * 1024


# ---- resource limits ----------------------------------------------------------------------


def apply_limits(limits: dict, in_user_namespace: bool) -> None:
    def cap(kind: int, soft: int, hard: int | None = None) -> None:
        resource.setrlimit(kind, (soft, soft if hard is None else hard))

    cap(resource.RLIMIT_AS, limits["memory_mb"] * MIB)
    cap(resource.RLIMIT_CPU, limits["cpu_seconds"], limits["cpu_seconds"] + 1)
    cap(resource.RLIMIT_FSIZE, limits["file_size_mb"] * MIB)
    cap(resource.RLIMIT_NOFILE, limits["open_files"])
    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_MSGQUEUE, 0)  # POSIX message queues hold data no folder shows
    # RLIMIT_NPROC counts every task (thread or process) of the user; in a fresh user
    # namespace only those inside it. The kernel does not enforce it for root.
    running = 1 if in_user_namespace else _user_tasks()
    cap(resource.RLIMIT_NPROC, running + limits["max_tasks"])


def _user_tasks() -> int:
    uid, total = os.getuid(), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            total += int(fields.get("Threads", "1"))
    return total


# ---- running ------------------------------------------------------------------------------


SCALARS = {"bool": bool, "str": str, "int": int, "float": float.fromhex, "bytes": bytes.fromhex}
SHOWN = {int: str, float: float.hex, bytes: bytes.hex, bool: bool, str: str}
CONTAINERS = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}


def encode(value, depth=0):
    """The tagged form of ``code_values`` (exact builtin types only)."""
    kind = type(value)
    if depth > 40:
        raise ValueError("nested too deeply")
    if value is None:
        return ["none"]
    if kind in SHOWN:
        return [kind.__name__, SHOWN[kind](value)]
    if kind.__name__ in CONTAINERS and CONTAINERS[kind.__name__] is kind:
        return [kind.__name__, [encode(item, depth + 1) for item in value]]
    if kind is dict:
        return ["dict", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]]
    raise ValueError(f"a {kind.__name__} is not a plain value")


def decode(data):
    """Arguments from the parent (already validated there): the inverse of ``encode``."""
    tag = data[0]
    if tag == "none":
        return None
    if tag in SCALARS:
        return SCALARS[tag](data[1])
    if tag == "dict":
        return {decode(k): decode(v) for k, v in data[1]}
    return CONTAINERS[tag](decode(item) for item in data[1])


def describe(error: BaseException) -> str:
    try:
        return f"{type(error).__name__}: {str(error)[:200]}"
    except BaseException:
        return "an exception that cannot be described"


def outcome(namespace: dict, call: list) -> list:
    name, args, kwargs = call
    function = namespace.get(name)
    if function is None:
        return ["raised", f"NameError: {name!r} is not defined"]
    try:
        value = function(*decode(args), **decode(kwargs))
    except BaseException as error:
        return ["raised", describe(error)]
    try:
        return ["ok", encode(value)]
    except BaseException as error:
        return ["unencodable", describe(error)]


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _sibling(name: str):
    """A module of this folder, imported from it (the package itself is not imported)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        return __import__(name)
    finally:
        del sys.path[0]


def main(config: dict) -> None:
    results_fd = config["results_fd"]
    with open(config["program"]) as file:
        program = file.read()
    with open(config["calls"]) as file:
        calls = json.load(file)
    limits = config["limits"]
    confine, clocks = _sibling("confine"), _sibling("clocks")
    if config["user_namespace"]:
        confine.mount_scratch(os.getcwd(), limits["disk_mb"])
        with open("program.py", "w") as file:  # for tracebacks
            file.write(program)
    apply_limits(limits, config["user_namespace"])
    landlock = confine.apply_landlock(os.getcwd(), config["hidden"])
    seccomp = confine.apply_filter(processes=limits["allow_subprocesses"])
    if limits["fake_clock"] is not None:
        clocks.fake_clocks(limits["fake_clock"])
    os.write(results_fd, f"ready landlock={landlock} seccomp={int(seccomp)}\n".encode())
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(program, "program.py", "exec"), namespace)
        failure = None
    except BaseException as error:
        traceback.print_exc()
        failure = ["raised", describe(error)]
    outcomes = [failure or outcome(namespace, call) for call in calls]
    sys.stdout.flush()
    sys.stderr.flush()
    write_all(results_fd, b"results " + json.dumps({"calls": outcomes}).encode() + b"\n")
    os._exit(0)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
