"""The child side of the code sandbox: confine this process, run the program, report values.

Started by ``code_sandbox.run_calls`` as ``python -I sandbox_child.py CONFIG_JSON``, in its own
session, in a fresh working directory, with a scrubbed environment. It uses only the standard
library (it must not import the package, which is not readable once confined).

In order, before any untrusted code runs:
1. the program and the calls to make are read from the working directory;
2. in a user and mount namespace: an empty tmpfs of ``disk_mb`` MiB (and at most
   ``MAX_FILES`` files) is mounted over the working directory, the total disk cap of a run;
3. resource limits (address space, CPU seconds, file size, open files, tasks, no core files);
4. Landlock, where the kernel has it: reading only the Python installation and system library
   folders minus the hidden ones (this package: its code and data, such as a task bank,
   wherever it is installed), writing only the working directory, no TCP bind/connect, and
   (Landlock ABI >= 6) no signals to processes outside the sandbox;
5. a seccomp filter, unless subprocesses are allowed: creating a process fails with EPERM,
   threads still work;
6. with ``fake_clock``, the clocks of ``time`` and ``datetime`` start at that moment: two
   runs set at different moments show a program whose result depends on the time;
7. "ready" is written to the results pipe. Only then does the program run; then each call
   ``function(*args, **kwargs)``, and one ``results`` line reports, per call, the value it
   returned (in the tagged form of ``code_values``) or the exception it raised.

Nothing here decides a verdict. Once the program runs it owns this process: it may write to
the pipe, patch this file's functions or exit at any moment, so everything it can make this
process say is treated by the parent as untrusted data, which only ever amounts to "these
calls returned these plain values". Expected values never enter this process.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import os
import platform
import resource
import sys
import time
import traceback

MIB = 1024 * 1024
MAX_FILES = 4096
MS_NOSUID, MS_NODEV = 2, 4
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def mount_scratch(folder: str, megabytes: int) -> None:
    """An empty tmpfs of ``megabytes`` over ``folder`` (needs a user and mount namespace)."""
    options = f"size={megabytes}m,nr_inodes={MAX_FILES},mode=0700".encode()
    flags = MS_NOSUID | MS_NODEV
    if _libc().mount(b"selfplay", folder.encode(), b"tmpfs", flags, options) != 0:
        raise OSError(ctypes.get_errno(), "mounting the scratch folder failed")
    os.chdir(folder)


# ---- resource limits ----------------------------------------------------------------------


def apply_limits(limits: dict, in_user_namespace: bool) -> None:
    def cap(kind: int, soft: int, hard: int | None = None) -> None:
        resource.setrlimit(kind, (soft, soft if hard is None else hard))

    cap(resource.RLIMIT_AS, limits["memory_mb"] * MIB)
    cap(resource.RLIMIT_CPU, limits["cpu_seconds"], limits["cpu_seconds"] + 1)
    cap(resource.RLIMIT_FSIZE, limits["file_size_mb"] * MIB)
    cap(resource.RLIMIT_NOFILE, limits["open_files"])
    cap(resource.RLIMIT_CORE, 0)
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


# ---- Landlock -----------------------------------------------------------------------------

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_ABI1 = (1 << 13) - 1  # execute ... make_sym
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2
READ_ONLY = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
SYSTEM_PATHS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/etc/ld.so.cache", "/etc/localtime")


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where there is none."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    version = _libc().syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(version), 0)


def apply_landlock(work: str, hidden: list[str]) -> int:
    """Confine file access to the interpreter (read) and ``work`` (write), never anything
    under ``hidden``; the ABI used."""
    abi = landlock_abi()
    if abi < 1:
        return 0
    libc = _libc()
    handled = FS_ABI1 | (FS_REFER if abi >= 2 else 0) | (FS_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net, size = NET_BIND_TCP | NET_CONNECT_TCP, 16
    if abi >= 6:
        attr.scoped, size = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL, 24
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        secret = [os.path.realpath(path) for path in hidden]
        for path in _interpreter_paths():
            _allow_but(libc, ruleset, path, READ_ONLY & handled, secret)
        _allow(libc, ruleset, "/dev/null", (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE) & handled)
        _allow(libc, ruleset, "/dev/urandom", FS_READ_FILE)
        _allow(libc, ruleset, work, handled)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


def _interpreter_paths() -> set[str]:
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    prefixes.add(os.path.dirname(os.path.realpath(sys.executable)))
    return {os.path.realpath(path) for path in (*prefixes, *SYSTEM_PATHS)}


def _allow_but(libc: ctypes.CDLL, ruleset: int, path: str, access: int, hidden: list) -> None:
    """Allow ``path`` except what lies under ``hidden``: Landlock only adds rights, so a
    folder holding a hidden one is allowed entry by entry (and listed, names only)."""
    inside = os.path.join(path, "")
    if any(path == secret or path.startswith(os.path.join(secret, "")) for secret in hidden):
        return
    if not any(secret.startswith(inside) for secret in hidden):
        _allow(libc, ruleset, path, access)
        return
    _allow(libc, ruleset, path, access & FS_READ_DIR)
    for entry in os.scandir(path):
        real = os.path.realpath(entry.path)
        if entry.is_symlink() and any(real.startswith(os.path.join(s, "")) for s in hidden):
            continue
        _allow_but(libc, ruleset, real if entry.is_symlink() else entry.path, access, hidden)


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a folder this system does not have
    try:
        if not os.path.isdir(path):
            access &= FILE_RIGHTS
        rule = _PathBeneath(access, fd)
        if libc.syscall(SYS_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


# ---- seccomp: no new processes ------------------------------------------------------------

# (audit arch, clone, fork, vfork, clone3); fork/vfork do not exist on aarch64
ARCHES = {
    "x86_64": (0xC000003E, 56, 57, 58, 435),
    "aarch64": (0xC00000B7, 220, 0xFFFFFFFF, 0xFFFFFFFF, 435),
}
LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
EPERM, ENOSYS, CLONE_THREAD = 1, 38, 0x00010000


class _SockFilter(ctypes.Structure):
    _fields_ = (
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter)))


def _no_process_filter(arch: int, clone: int, fork: int, vfork: int, clone3: int) -> list:
    """BPF: fork/vfork/clone-without-CLONE_THREAD fail with EPERM, clone3 with ENOSYS (libc
    then falls back to clone, so threads still start); other architectures' calls are denied."""
    deny, allow, nosys = "deny", "allow", "nosys"
    program = [
        ("", LD_ABS, 4, None, None),  # seccomp_data.arch
        ("", JEQ, arch, None, deny),
        ("", LD_ABS, 0, None, None),  # seccomp_data.nr
        ("", JGE, 0x40000000, deny, None),  # x32 system calls
        ("", JEQ, clone3, nosys, None),
        ("", JEQ, fork, deny, None),
        ("", JEQ, vfork, deny, None),
        ("", JEQ, clone, None, allow),
        ("", LD_ABS, 16, None, None),  # low word of the first argument: clone flags
        ("", JSET, CLONE_THREAD, allow, deny),
        (allow, RET, ALLOW, None, None),
        (deny, RET, ERRNO | EPERM, None, None),
        (nosys, RET, ERRNO | ENOSYS, None, None),
    ]
    where = {label: index for index, (label, *_) in enumerate(program) if label}

    def hop(target: str | None, pc: int) -> int:
        return 0 if target is None else where[target] - pc - 1

    return [
        _SockFilter(code, hop(jt, pc), hop(jf, pc), k)
        for pc, (_, code, k, jt, jf) in enumerate(program)
    ]


def apply_no_processes() -> bool:
    """Install the seccomp filter; False where this architecture is not supported."""
    numbers = ARCHES.get(platform.machine())
    if sys.platform != "linux" or numbers is None:
        return False
    instructions = _no_process_filter(*numbers)
    array = (_SockFilter * len(instructions))(*instructions)
    program = _SockFprog(len(instructions), array)
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "installing the seccomp filter failed")
    return True


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


def fake_clocks(start: float) -> None:
    """Make the standard clocks run from ``start`` (seconds since the epoch) instead of now."""
    now = time.time()  # every clock reads ``start`` now, then runs on
    for name in ("time", "monotonic", "perf_counter", "clock_gettime"):
        clock, clock_ns = getattr(time, name), getattr(time, f"{name}_ns")
        shift = start - (now if name in ("time", "clock_gettime") else clock())
        setattr(time, name, lambda *at, clock=clock, shift=shift: clock(*at) + shift)
        nanos = int(shift * 1e9)
        setattr(time, f"{name}_ns", lambda *at, clock=clock_ns, nanos=nanos: clock(*at) + nanos)
    for name in ("localtime", "gmtime", "ctime"):
        real = getattr(time, name)
        setattr(time, name, lambda at=None, real=real: real(time.time() if at is None else at))
    strftime, asctime = time.strftime, time.asctime
    time.strftime = lambda form, t=None: strftime(form, time.localtime() if t is None else t)
    time.asctime = lambda t=None: asctime(time.localtime() if t is None else t)

    class Date(datetime.date):
        @classmethod
        def today(cls):
            return cls.fromtimestamp(time.time())

    class DateTime(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls.fromtimestamp(time.time(), tz)

        today = now
        utcnow = classmethod(lambda cls: cls.now(datetime.timezone.utc).replace(tzinfo=None))

    for module in (datetime, sys.modules.get("_datetime", datetime)):
        module.date, module.datetime = Date, DateTime


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(config: dict) -> None:
    results_fd = config["results_fd"]
    with open(config["program"]) as file:
        program = file.read()
    with open(config["calls"]) as file:
        calls = json.load(file)
    limits = config["limits"]
    if config["user_namespace"]:
        mount_scratch(os.getcwd(), limits["disk_mb"])
        with open("program.py", "w") as file:  # for tracebacks
            file.write(program)
    apply_limits(limits, config["user_namespace"])
    landlock = apply_landlock(os.getcwd(), config["hidden"])
    seccomp = False if limits["allow_subprocesses"] else apply_no_processes()
    if limits["fake_clock"] is not None:
        fake_clocks(limits["fake_clock"])
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
