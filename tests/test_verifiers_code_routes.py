"""Routes out of the code sandbox to other processes, kind by kind, with and without namespaces.

Round 4 found four: a UNIX socket of the same user outside (its D-Bus, SSH agent or
docker.sock), reached both ways with or without namespaces; inotify watching folders outside;
System V semaphores holding kernel memory outside every cap; and, without namespaces, UDP.
Each is judged from outside the sandbox where it can be (what a listener received), never
from what the program says.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading

import pytest

from selfplay.verifiers import code_sandbox
from selfplay.verifiers.code_sandbox import Call, Limits, isolation, run_calls

LIMITS = Limits(wall_seconds=3.0)


@pytest.fixture(params=[True, False], ids=["namespaces", "no namespaces"])
def namespaced(request, monkeypatch):
    if not isolation()["seccomp"]:
        pytest.skip("this machine has no seccomp filter for the sandbox")
    if request.param and not code_sandbox.namespaces_available():
        pytest.skip("this machine has no unprivileged namespaces")
    if not request.param:
        monkeypatch.setattr(code_sandbox, "namespaces_available", lambda: False)
    return request.param


def value(program: str):
    """What ``f()`` returned in the sandbox, or the exception's description."""
    result = run_calls(program, [Call("f")], LIMITS)
    assert result.status == "ok", result
    outcome = result.outcomes[0]
    return outcome.value if outcome.kind == "ok" else outcome.detail


@pytest.fixture()
def unix_listener(tmp_path):
    """A stream and a datagram UNIX socket in a mode-700 folder outside; what they heard."""
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    stream = socket.socket(socket.AF_UNIX)
    stream.bind(str(folder / "agent.sock"))
    stream.listen()
    stream.settimeout(0.2)
    datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    datagram.bind(str(folder / "bus.sock"))
    datagram.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = stream.accept()
            except OSError:
                continue
            received.append(connection.recv(99) or b"connected")
            connection.sendall(b"secret")

    def heard() -> list[bytes]:
        datagram.settimeout(0.3)
        with contextlib.suppress(OSError):
            received.append(datagram.recv(99))
        return received

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield folder, heard
    stop.set()
    thread.join()
    stream.close()
    datagram.close()


UNIX_ROUTES = [
    "s = socket.socket(socket.AF_UNIX); s.connect(STREAM); s.sendall(b'hi'); return s.recv(99)",
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); return s.sendto(b'hi', BUS)",
    "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); return a.sendto(b'hi', BUS)",
    "a, b = socket.socketpair(); a.connect(STREAM); return a.send(b'hi')",
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(STREAM); return 1",
    "import asyncio\n    async def go():\n"
    "        r, w = await asyncio.open_unix_connection(STREAM)\n"
    "        w.write(b'hi'); await w.drain(); return await r.read(9)\n"
    "    return asyncio.run(go())",
]


@pytest.mark.parametrize("route", UNIX_ROUTES, ids=range(len(UNIX_ROUTES)))
def test_no_unix_socket_outside_is_reached(namespaced, unix_listener, route):
    folder, heard = unix_listener
    program = (
        f"import socket\nSTREAM, BUS = {str(folder / 'agent.sock')!r}, {str(folder / 'bus.sock')!r}"
        f"\ndef f():\n    {route}\n"
    )
    got = value(program)
    assert heard() == [], (route, got)
    assert got != b"secret"


def test_no_udp_datagram_leaves(namespaced):
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    routes = [
        f"socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))",
        f"socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b'x', ('::1', {port}))",
        f"socket.create_connection(('127.0.0.1', {port}), timeout=1)",
    ]
    for route in routes:
        value(f"import socket\ndef f():\n    return {route}\n")
    with pytest.raises(TimeoutError):
        listener.recvfrom(9)
    listener.close()


# libc calls made through ctypes: each returns -1 when refused
KERNEL_ROUTES = {
    "inotify on /tmp": "fd = c.inotify_init1(0); return [fd, c.inotify_add_watch(fd, b'/tmp', 8)]",
    "inotify, old call": "fd = c.inotify_init(); return [fd, c.inotify_add_watch(fd, b'/', 256)]",
    "fanotify": "return [c.fanotify_init(0, 0)]",
    "System V semaphores": "return [c.semget(1234 + k, 32000, 0o1600) for k in range(3)]",
    "a private semaphore set": "return [c.semget(0, 250, 0o600)]",
    "POSIX message queue": "return [c.mq_open(b'/q', 0o100 | 2, 0o600, None)]",
    "io_uring": "return [c.syscall(425, 8, ctypes.create_string_buffer(120))]",
    "a netlink socket": "return [c.socket(16, 3, 0)]",
    "an abstract UNIX socket": "return [c.socket(1, 1, 0)]",
    "another process's memory": "return [c.process_vm_readv(os.getppid(), None, 0, None, 0, 0)]",
    "another process's descriptors": "pid = c.syscall(434, os.getppid(), 0)\n"
    "    return [c.syscall(438, pid, 0, 0)]",
}


@pytest.mark.parametrize("name", list(KERNEL_ROUTES))
def test_kernel_routes_outside_are_refused(namespaced, name):
    program = (
        "import ctypes, os\ndef f():\n    c = ctypes.CDLL(None, use_errno=True)\n"
        f"    {KERNEL_ROUTES[name]}\n"
    )
    got = value(program)
    assert isinstance(got, list) and -1 in got, (name, got)


def test_what_a_program_needs_inside_still_works(namespaced):
    program = (
        "import asyncio, socket, threading\n"
        "async def three():\n    return 3\n"
        "def f():\n    a, b = socket.socketpair()\n    a.sendall(b'ok')\n"
        "    t = threading.Thread(target=print); t.start(); t.join()\n"
        "    return [b.recv(9), asyncio.run(three())]\n"
    )
    assert value(program) == [b"ok", 3]


def test_no_semaphore_outlives_a_run_without_namespaces(monkeypatch):
    monkeypatch.setattr(code_sandbox, "namespaces_available", lambda: False)
    if not os.path.exists("/proc/sysvipc/sem"):
        pytest.skip("this machine does not list System V semaphores")

    def sets() -> int:
        with open("/proc/sysvipc/sem") as listing:
            return len(listing.readlines())

    before = sets()
    value("import ctypes\ndef f():\n    return ctypes.CDLL(None).semget(4242, 8, 0o1600)\n")
    assert sets() == before
