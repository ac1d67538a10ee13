"""The kernel's confinement of one sandboxed run: a scratch tmpfs, Landlock and seccomp.

Loaded by ``child.py`` from its own folder before any untrusted code runs (it uses
only the standard library; once confined, the package is not readable). ``code_sandbox``
imports it to say which protections a machine gives (``isolation``).

- ``mount_scratch``: in a user and mount namespace, an empty tmpfs of ``disk_mb`` MiB (and at
  most ``MAX_FILES`` files) over the working directory: the total disk cap of a run. Files
  without a name (unlinked while open) still take its space.
- ``apply_landlock``: reading only the Python installation and system library folders minus
  the hidden ones (this package: its code and data, such as a task bank, wherever it is
  installed), writing only the working directory, no TCP bind/connect, and (Landlock ABI >=
  6) no signals to processes outside the sandbox. A Landlock domain also cannot mount.
- ``apply_filter``: a seccomp filter, always installed where the architecture is supported.
  Storage that no folder shows is refused (``memfd_create``, ``memfd_secret``, System V
  shared memory and message queues, kernel keyrings: one program held 900 MiB in memfd files
  the disk cap never saw), as are System V semaphores and POSIX message queues, mounts of its
  own (``mount`` and the new mount API), every socket (a UNIX socket of the same user elsewhere
  is reached whatever the namespaces; UDP leaves without them) but a connected stream pair,
  inotify and fanotify, io_uring, and the routes into another process (``ptrace``,
  ``process_vm_readv``, ``pidfd_getfd``); and, unless subprocesses are allowed, creating a
  process (threads still work). Each fails with EPERM.
- ``over_disk``: without namespaces, the parent's watch of the disk cap: the working folder
  and the files without a name that the run's processes hold open.
"""

from __future__ import annotations

import ctypes
import os
import platform
import stat
import sys

MAX_FILES = 4096
MAX_WATCHED_FILES = 10_000
MS_NOSUID, MS_NODEV = 2, 4
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def mount_scratch(folder: str, megabytes: int) -> None:
    """An empty tmpfs of ``megabytes`` over ``folder`` (needs a user and mount namespace)."""
    options = f"size={megabytes}m,nr_inodes={MAX_FILES},mode=0700".encode()
    flags = MS_NOSUID | MS_NODEV
    if _libc().mount(b"selfplay", folder.encode(), b"tmpfs", flags, options) != 0:
        raise OSError(ctypes.get_errno(), "mounting the scratch folder failed")
    os.chdir(folder)


# ---- the disk cap without namespaces: a watch, run by the parent ---------------------------


def over_disk(folder: str | os.PathLike, megabytes: int, pid: int) -> bool:
    """Whether ``folder``, with the files without a name that the run's processes hold open
    (unlinked while open), holds more than ``megabytes`` MiB or ``MAX_WATCHED_FILES``
    entries."""
    total, seen, stack = unnamed_bytes(pid), 0, [folder]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += info.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            if seen > MAX_WATCHED_FILES or total > megabytes << 20:
                return True
    return total > megabytes << 20


def unnamed_bytes(pid: int) -> int:
    """The space taken by regular files with no name left that ``pid`` or its descendants
    hold open: a folder scan never sees them."""
    total, pids, counted = 0, [pid], set()
    while pids:
        current = pids.pop()
        pids.extend(children(current))
        try:
            descriptors = os.listdir(f"/proc/{current}/fd")
        except OSError:
            continue
        for fd in descriptors:
            try:
                info = os.stat(f"/proc/{current}/fd/{fd}")
            except OSError:
                continue
            unnamed = stat.S_ISREG(info.st_mode) and info.st_nlink == 0
            if unnamed and (info.st_dev, info.st_ino) not in counted:
                counted.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as file:
            text = file.read()
    except OSError:
        return []
    return [int(child) for child in text.split()]


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


# ---- seccomp: no hidden storage, no mounts, no sockets, (unless allowed) no new processes -

# (audit arch, clone, fork, vfork, clone3); fork/vfork do not exist on aarch64
ARCHES = {
    "x86_64": (0xC000003E, 56, 57, 58, 435),
    "aarch64": (0xC00000B7, 220, 0xFFFFFFFF, 0xFFFFFFFF, 435),
}
NEW_MOUNT_API = {"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431}
NEW_MOUNT_API |= {"fsmount": 432, "fspick": 433, "mount_setattr": 442, "memfd_secret": 447}
DENIED = {
    "x86_64": {"memfd_create": 319, "shmget": 29, "shmat": 30, "msgget": 68, "mount": 165},
    "aarch64": {"memfd_create": 279, "shmget": 194, "shmat": 196, "msgget": 186, "mount": 40},
}
DENIED["x86_64"] |= {"umount2": 166, "pivot_root": 155, **NEW_MOUNT_API}
DENIED["aarch64"] |= {"umount2": 39, "pivot_root": 41, **NEW_MOUNT_API}
DENIED["x86_64"] |= {"add_key": 248, "request_key": 249, "keyctl": 250}  # keyrings hold data
DENIED["aarch64"] |= {"add_key": 217, "request_key": 218, "keyctl": 219}
# System V semaphores hold kernel memory outside every cap (and, without namespaces, outlive
# the run); POSIX message queues the same.
DENIED["x86_64"] |= {"semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220, "mq_open": 240}
DENIED["aarch64"] |= {"semget": 190, "semctl": 191, "semtimedop": 192, "semop": 193}
DENIED["aarch64"] |= {"mq_open": 180}
# Every route to another process or the network: no socket of any family is made (a UNIX
# socket reaches the user's D-Bus, SSH agent or docker.sock whatever the namespaces; UDP
# leaves without them); a pair of connected stream sockets inside the run stays allowed
# (``socketpair``, checked below). Watching folders outside (inotify, fanotify) and
# io_uring, which performs calls the filter never sees, are refused too, as are the routes
# into another process's memory or descriptors.
SOCKETS = {"socket": 41, "connect": 42, "accept": 43, "bind": 49, "listen": 50, "accept4": 288}
DENIED["x86_64"] |= SOCKETS | {"inotify_init": 253, "inotify_init1": 294}
DENIED["x86_64"] |= {"fanotify_init": 300, "fanotify_mark": 301, "ptrace": 101}
DENIED["x86_64"] |= {"process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438}
SOCKETS = {"socket": 198, "bind": 200, "listen": 201, "accept": 202, "connect": 203}
DENIED["aarch64"] |= SOCKETS | {"accept4": 242, "inotify_init1": 26, "ptrace": 117}
DENIED["aarch64"] |= {"fanotify_init": 262, "fanotify_mark": 263, "pidfd_getfd": 438}
DENIED["aarch64"] |= {"process_vm_readv": 270, "process_vm_writev": 271}
IO_URING = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427}
DENIED["x86_64"] |= IO_URING
DENIED["aarch64"] |= IO_URING
SOCKETPAIR = {"x86_64": 53, "aarch64": 199}
SOCK_STREAM, SOCK_TYPE_MASK = 1, 0xF
LD_ABS, JEQ, JGE, JSET, RET, AND = 0x20, 0x15, 0x35, 0x45, 0x06, 0x54
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


def _filter(machine: str, processes: bool) -> list:
    """BPF: the ``DENIED`` calls fail with EPERM; without ``processes``, fork/vfork/clone
    without CLONE_THREAD too, and clone3 with ENOSYS (libc then falls back to clone, so
    threads still start); other architectures' calls are denied. The call number is looked
    up by binary search: every system call of the run passes through the filter."""
    arch, clone, fork, vfork, clone3 = ARCHES[machine]
    special = dict.fromkeys(DENIED[machine].values(), "deny")
    special[SOCKETPAIR[machine]] = "socketpair"
    if not processes:
        special |= {fork: "deny", vfork: "deny", clone3: "nosys", clone: "clone"}
    special.pop(0xFFFFFFFF, None)  # fork and vfork do not exist on aarch64
    program = [
        ("", LD_ABS, 4, None, None),  # seccomp_data.arch
        ("", JEQ, arch, None, "deny"),
        ("", LD_ABS, 0, None, None),  # seccomp_data.nr
        ("", JGE, 0x40000000, "deny", None),  # x32 system calls
        *_search(sorted(special.items()), ""),
        ("clone", LD_ABS, 16, None, None),  # low word of the first argument: clone flags
        ("", JSET, CLONE_THREAD, "allow", "deny"),
        ("socketpair", LD_ABS, 24, None, None),  # low word of the second argument: the type
        ("", AND, SOCK_TYPE_MASK, None, None),  # less SOCK_NONBLOCK and SOCK_CLOEXEC
        ("", JEQ, SOCK_STREAM, "allow", "deny"),
        ("allow", RET, ALLOW, None, None),
        ("deny", RET, ERRNO | EPERM, None, None),
        ("nosys", RET, ERRNO | ENOSYS, None, None),
    ]
    where = {label: index for index, (label, *_) in enumerate(program) if label}

    def hop(target: str | None, pc: int) -> int:
        return 0 if target is None else where[target] - pc - 1

    return [
        _SockFilter(code, hop(jt, pc), hop(jf, pc), k)
        for pc, (_, code, k, jt, jf) in enumerate(program)
    ]


def _search(entries: list[tuple[int, str]], label: str, name: str = "n") -> list[tuple]:
    """Instructions jumping to each entry's target for its call number, else to "allow"; the
    first is labelled ``label`` (``name`` keeps the labels inside unique)."""
    if len(entries) <= 3:
        last = len(entries) - 1
        return [
            (label if i == 0 else "", JEQ, number, target, "allow" if i == last else None)
            for i, (number, target) in enumerate(entries)
        ]
    middle, right = len(entries) // 2, f"{name}>"
    return [
        (label, JGE, entries[middle][0], right, None),
        *_search(entries[:middle], "", f"{name}<"),
        *_search(entries[middle:], right, right),
    ]


def apply_filter(processes: bool) -> bool:
    """Install the seccomp filter; False where this architecture is not supported."""
    machine = platform.machine()
    if sys.platform != "linux" or machine not in ARCHES:
        return False
    instructions = _filter(machine, processes)
    array = (_SockFilter * len(instructions))(*instructions)
    program = _SockFprog(len(instructions), array)
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "installing the seccomp filter failed")
    return True
