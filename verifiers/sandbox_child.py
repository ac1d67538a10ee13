"""The child side of the code sandbox: confine this process, run the program, report values.

Started by ``code_sandbox.run_calls`` as ``python -I sandbox_child.py CONFIG_JSON``, in its
own session, in a fresh working directory, with a scrubbed environment. It uses only the
standard library (it must not import the package, which is not readable once confined).

In order, before any untrusted code runs:
1. the program and the calls to make are read from the working directory;
2. resource limits (address space, CPU seconds, file size, open files, tasks, no core files);
3. Landlock, where the kernel has it: reading only the Python installation and system library
   folders, writing only the working directory, no TCP bind/connect, and (Landlock ABI >= 6)
   no signals to processes outside the sandbox;
4. a seccomp filter, unless subprocesses are allowed: creating a process fails with EPERM,
   threads still work;
5. "ready" is written to the results pipe. Only then does the program run; then each call
   ``function(*args, **kwargs)``, and one ``results`` line reports, per call, the value it
   returned (in the tagged form of ``code_values``) or the exception it raised.

Nothing here decides a verdict. Once the program runs it owns this process: it may write to
the pipe, patch this file's functions or exit at any moment, so everything it can make this
process say is treated by the parent as untrusted data, which only ever amounts to "these
calls returned these plain values". Expected values never enter this process.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import resource
import sys
import traceback

MIB = 1024 * 1024
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2

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


def apply_landlock(work: str) -> int:
    """Confine file access to the interpreter (read) and ``work`` (write); the ABI used."""
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
        for path in _interpreter_paths():
            _allow(libc, ruleset, path, READ_ONLY & handled)
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


def encode(value, depth=0):
    """The tagged form of ``code_values`` (exact builtin types only)."""
    if depth > 40:
        raise ValueError("nested too deeply")
    kind = type(value)
    if value is None:
        return ["none"]
    if kind in (bool, str):
        return [kind.__name__, value]
    if kind is int:
        return ["int", str(value)]
    if kind is float:
        return ["float", value.hex()]
    if kind is bytes:
        return ["bytes", value.hex()]
    if kind in (list, tuple, set, frozenset):
        return [kind.__name__, [encode(item, depth + 1) for item in value]]
    if kind is dict:
        return ["dict", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]]
    raise ValueError(f"a {kind.__name__} is not a plain value")


def decode(data):
    """Arguments from the parent (already validated there): the inverse of ``encode``."""
    tag, rest = data[0], data[1:]
    makers = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}
    if tag == "none":
        return None
    if tag in ("bool", "str"):
        return rest[0]
    if tag == "int":
        return int(rest[0])
    if tag == "float":
        return float.fromhex(rest[0])
    if tag == "bytes":
        return bytes.fromhex(rest[0])
    if tag in makers:
        return makers[tag](decode(item) for item in rest[0])
    return {decode(k): decode(v) for k, v in rest[0]}


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


def main(config: dict) -> None:
    results_fd = config["results_fd"]
    with open(config["program"]) as file:
        program = file.read()
    with open(config["calls"]) as file:
        calls = json.load(file)
    apply_limits(config["limits"], config["user_namespace"])
    landlock = apply_landlock(os.getcwd())
    seccomp = False if config["limits"]["allow_subprocesses"] else apply_no_processes()
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
