"""The process's memory: the heap handed back to the system, and allocations that fail.

The heap (``hardware.malloc_trim``; glibc only, other C libraries are left alone): glibc keeps
what tensors free for reuse, so a process's resident memory climbs through an update of many
micro-batches (SmolLM2-135M under LoRA gained 50-100 MB with each one-row micro-batch).
`Heap.release` hands what is free back to the system (``malloc_trim``) once more than
``KEEP_FREE_BYTES`` is free: before the first of a step's backward passes (when it has several)
and after each but the last, after each update and after each rollout; from an update's first
pass on, blocks of 4 MB and more also go straight back when freed (``mallopt``'s mmap
threshold, restored by `Heap.updating`). Below that, and in an update of one pass, glibc keeps
what it has, because memory handed back costs page faults when it is touched again: trimming
after every phase, and the threshold in every update, made the peer race's short iterations
1.2-1.5x slower.

An allocation that fails (CPU or GPU) becomes `OutOfMemory` (exit code 6), whose message names
the setting to lower; one that fails elsewhere (a cold start, an evaluation, another command)
is stated the same way, pointing at what to lower, never a traceback.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from typing import Any

KEEP_FREE_BYTES = 256 << 20  # free heap glibc may keep; beyond it, it goes back
M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
UPDATE_MMAP_THRESHOLD = 4 << 20
LARGEST_MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic threshold on 64-bit systems
_MALLINFO2 = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks")


class Heap:
    """The process's glibc heap, handed back to the system (``trim``), or left alone."""

    def __init__(self, trim: bool = False) -> None:
        self.glibc = _glibc() if trim else None
        self._updating = self._lowered = False  # in an update; its mmap threshold lowered

    def release(self) -> None:
        """Free heap back to the system beyond ``KEEP_FREE_BYTES``; between the backward passes
        of an update, large blocks also go straight back for the rest of that update."""
        if self.glibc is None:
            return
        if self._updating and not self._lowered:
            self.glibc.mallopt(M_MMAP_THRESHOLD, UPDATE_MMAP_THRESHOLD)
            self._lowered = True
        if _free_heap_bytes(self.glibc) > KEEP_FREE_BYTES:
            self.glibc.malloc_trim(0)

    @contextlib.contextmanager
    def updating(self) -> Iterator[None]:
        """The update, with what it leaves free handed back after it."""
        self._updating = True
        try:
            yield
        finally:
            self._updating = False
            if self._lowered and self.glibc is not None:
                self.glibc.mallopt(M_MMAP_THRESHOLD, LARGEST_MMAP_THRESHOLD)
            self._lowered = False
            self.release()


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2``; ``fordblks`` is the bytes free in its heaps."""

    _fields_ = [(name, ctypes.c_size_t) for name in (*_MALLINFO2, "fordblks", "keepcost")]


def _glibc() -> Any:
    """glibc's ``malloc_trim``, ``mallopt`` and ``mallinfo2``; None on another C library."""
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        library = ctypes.CDLL(name) if name else None
        if library is None or not hasattr(library, "malloc_trim"):
            return None  # musl, macOS
        library.malloc_trim.argtypes, library.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
        library.mallopt.argtypes, library.mallopt.restype = [ctypes.c_int] * 2, ctypes.c_int
        if hasattr(library, "mallinfo2"):  # glibc 2.33 and later
            library.mallinfo2.argtypes, library.mallinfo2.restype = [], _MallInfo2
    except (OSError, AttributeError):
        return None
    return library


def _free_heap_bytes(glibc: Any) -> int:
    """Bytes free in glibc's heaps (``mallinfo2().fordblks``); without mallinfo2, as if every
    byte were free (so ``release`` always trims)."""
    if not hasattr(glibc, "mallinfo2"):
        return 1 << 62
    return int(glibc.mallinfo2().fordblks)


class OutOfMemory(RuntimeError):
    """The update or a rollout could not allocate memory (exit code 6); the message names the
    setting to lower and its value, and the run keeps its last checkpoint. ``resume_with`` is
    the ``KEY=VALUE`` a resume may set to go on (core/config/changes.py), when there is one."""

    def __init__(self, message: str, resume_with: str | None = None) -> None:
        super().__init__(message)
        self.resume_with = resume_with


def out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocation that failed (CPU or GPU)."""
    if isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError":
        return True
    text = str(err).lower()
    return isinstance(err, RuntimeError) and (
        "can't allocate memory" in text or "out of memory" in text
    )


def stated(err: Exception) -> Exception:
    """``err``; an allocation that failed where nothing named a setting (a cold start, an
    evaluation, another command) as `OutOfMemory`, pointing at what to lower."""
    if isinstance(err, OutOfMemory) or not out_of_memory(err):
        return err
    return OutOfMemory(
        f'Ran out of memory ({first_line(err)}). docs/troubleshooting.md, "The run stops: out '
        'of memory", says what to lower.'
    )


def first_line(err: BaseException) -> str:
    """The allocator's own first line, as a message quotes it."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
