"""The fake clocks of a sandboxed run: every clock the standard library reads starts at a moment.

Loaded by ``child.py`` from its own folder before any untrusted code runs (standard library
only, like ``confine.py``). Two runs set at different moments show a program
whose result depends on the time: the code proposer's determinism check runs a function under
clocks years apart (games/proposers/code_proposer_solver.py).

What reads from the fake moment (``fake_clocks(start)``), each clock running on from it:

- ``time``: ``time``, ``time_ns``, ``monotonic``, ``perf_counter``, ``clock_gettime`` (every
  clock id) and their ``_ns`` forms; ``localtime``, ``gmtime``, ``ctime``, ``asctime`` and
  ``strftime`` without a time given;
- ``datetime``: ``now``, ``today`` and ``utcnow`` of ``date`` and ``datetime``, in ``datetime``
  and ``_datetime``, their ``min`` and ``max`` included (a classmethod reached through an
  instance of the original class read the real clock);
- ``os.times`` and ``posix.times``: ``elapsed``, the time since the machine started;
- the time stamps of files: ``os.stat``, ``lstat``, ``fstat`` and ``scandir``'s entries, in
  ``os`` and ``posix`` (a file the program writes carries the real time of its writing);
- ``uuid.uuid1``, which reads the system's clock unless told otherwise.

Routes to the real clock that no Python name wraps are refused for the rest of the run by an
audit hook (which no program can remove): ``ctypes`` (libc's ``time``) and ``sqlite3``
(``strftime('%s', 'now')``). What is not covered: a program written to defeat the check
through the interpreter's internals (a wrapper's closure, ``gc``), and, where Landlock is
missing, files such as ``/proc/uptime``. The check guards a reward against programs that read
the time, not against one written knowing this file (docs/verifiers.md).
"""

from __future__ import annotations

import datetime
import os
import posix
import sys
import time

REFUSED_EVENTS = ("ctypes.", "sqlite3.")
STAT_CALLS = ("stat", "lstat", "fstat")


def fake_clocks(start: float) -> None:
    """Make every standard clock run from ``start`` (seconds since the epoch) instead of now."""
    wall = start - time.time()  # the real clock's shift: file time stamps move with it
    _time_module(start)
    _elapsed(start - os.times().elapsed)
    _file_times(wall)
    _datetime_module()
    _uuid_module()
    sys.addaudithook(_refuse_other_clocks)


def _shifted(clock, shift):
    def read(*at):
        return clock(*at) + shift

    return read


def _time_module(start: float) -> None:
    now = time.time()  # every clock reads ``start`` now, then runs on
    for name in ("time", "monotonic", "perf_counter", "clock_gettime"):
        clock, clock_ns = getattr(time, name), getattr(time, f"{name}_ns")
        shift = start - (now if name in ("time", "clock_gettime") else clock())
        setattr(time, name, _shifted(clock, shift))
        setattr(time, f"{name}_ns", _shifted(clock_ns, int(shift * 1e9)))
    for name in ("localtime", "gmtime", "ctime"):
        setattr(time, name, _at_now(getattr(time, name)))
    strftime, asctime = time.strftime, time.asctime

    def formatted(form, t=None):
        return strftime(form, time.localtime() if t is None else t)

    def written(t=None):
        return asctime(time.localtime() if t is None else t)

    time.strftime, time.asctime = formatted, written


def _at_now(real):
    def read(at=None):
        return real(time.time() if at is None else at)

    return read


def _elapsed(shift: float) -> None:
    times = posix.times

    def shifted():
        real = times()
        return os.times_result((*real[:4], real[4] + shift))

    os.times = posix.times = shifted


def _file_times(shift: float) -> None:
    """File time stamps moved by ``shift`` seconds, as the wall clock is."""
    nanos = int(shift * 1e9)

    def moved(result: os.stat_result) -> os.stat_result:
        visible = list(result)
        for index in (7, 8, 9):  # whole seconds of atime, mtime, ctime
            visible[index] = int(visible[index] + shift)
        extra = {
            name: getattr(result, name)
            for name in ("st_blksize", "st_blocks", "st_rdev")
            if hasattr(result, name)
        }
        for kind in ("atime", "mtime", "ctime"):
            extra[f"st_{kind}"] = getattr(result, f"st_{kind}") + shift
            extra[f"st_{kind}_ns"] = getattr(result, f"st_{kind}_ns") + nanos
        return os.stat_result(visible, extra)

    for name in STAT_CALLS:
        real = getattr(posix, name)
        wrapped = _stat_call(real, moved)
        for module in (os, posix):
            setattr(module, name, wrapped)
        for support in (os.supports_fd, os.supports_dir_fd, os.supports_follow_symlinks):
            if real in support:
                support.add(wrapped)
    scandir = posix.scandir

    def scanned(*args, **kwargs):
        return _Scan(scandir(*args, **kwargs), moved)

    os.scandir = posix.scandir = scanned


def _stat_call(real, moved):
    def call(*args, **kwargs):
        return moved(real(*args, **kwargs))

    return call


class _Entry:
    """A ``scandir`` entry whose ``stat`` shows the moved time stamps."""

    __slots__ = ("_entry", "_moved")

    def __init__(self, entry, moved) -> None:
        self._entry, self._moved = entry, moved

    def __getattr__(self, name):
        return getattr(self._entry, name)

    def __fspath__(self):
        return self._entry.__fspath__()

    def __repr__(self) -> str:
        return repr(self._entry)

    def stat(self, *, follow_symlinks=True):
        return self._moved(self._entry.stat(follow_symlinks=follow_symlinks))


class _Scan:
    __slots__ = ("_entries", "_moved")

    def __init__(self, entries, moved) -> None:
        self._entries, self._moved = entries, moved

    def __iter__(self):
        return self

    def __next__(self):
        return _Entry(next(self._entries), self._moved)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._entries.close()

    def close(self) -> None:
        self._entries.close()


def _datetime_module() -> None:
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

    Date.min, Date.max = Date(1, 1, 1), Date(9999, 12, 31)
    DateTime.min = DateTime(1, 1, 1)
    DateTime.max = DateTime(9999, 12, 31, 23, 59, 59, 999999)
    for module in (datetime, sys.modules.get("_datetime", datetime)):
        module.date, module.datetime = Date, DateTime


def _uuid_module() -> None:
    import uuid

    uuid._generate_time_safe = None  # uuid1 then reads time.time_ns, which is fake


def _refuse_other_clocks(event: str, args: tuple) -> None:
    if event.startswith(REFUSED_EVENTS):
        library = event.split(".", 1)[0]
        raise RuntimeError(
            f"{library} is not available where the clocks are set (it reads the real clock)"
        )
