"""The heap goes back to the system only when glibc keeps more than it may (``release``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from selfplay.core.machine import memory


class FakeGlibc:
    def __init__(self, free: int) -> None:
        self.free, self.trims = free, 0
        self.mallopts: list[tuple[int, int]] = []

    def mallopt(self, parameter: int, value: int) -> int:
        self.mallopts.append((parameter, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.trims += 1
        return 1

    def mallinfo2(self) -> SimpleNamespace:
        return SimpleNamespace(fordblks=self.free)


def heap(glibc: object | None) -> memory.Heap:
    made = memory.Heap(trim=False)
    made.glibc = glibc
    return made


def test_free_heap_goes_back_only_beyond_what_glibc_may_keep():
    kept = FakeGlibc(memory.KEEP_FREE_BYTES - 1)
    heap(kept).release()
    assert kept.trims == 0
    beyond = FakeGlibc(memory.KEEP_FREE_BYTES + 1)
    run = heap(beyond)
    run.release()
    with run.updating():
        pass
    assert beyond.trims == 2


def test_the_mmap_threshold_is_lowered_only_in_an_update_of_several_passes():
    glibc = FakeGlibc(0)
    run = heap(glibc)
    with run.updating():  # one backward pass: nothing between passes
        pass
    assert glibc.mallopts == []
    with run.updating():
        run.release()  # before the first of several passes, and between two
        run.release()
    lowered = (memory.M_MMAP_THRESHOLD, memory.UPDATE_MMAP_THRESHOLD)
    assert glibc.mallopts == [lowered, (memory.M_MMAP_THRESHOLD, memory.LARGEST_MMAP_THRESHOLD)]
    run.release()  # after a rollout
    assert len(glibc.mallopts) == 2


def test_without_malloc_trim_nothing_is_called(monkeypatch):
    """hardware.malloc_trim=false: glibc is never loaded, so a heap far beyond what it may
    keep is left alone; the same heap with malloc_trim on is trimmed."""
    fake = FakeGlibc(memory.KEEP_FREE_BYTES * 4)
    monkeypatch.setattr(memory, "_glibc", lambda: fake)
    untouched = memory.Heap(trim=False)
    untouched.release()
    with untouched.updating():
        untouched.release()
    assert untouched.glibc is None
    assert (fake.trims, fake.mallopts) == (0, [])
    memory.Heap(trim=True).release()
    assert fake.trims == 1


def resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * 4096


M_TRIM_THRESHOLD = -1  # mallopt's parameter number (malloc.h)


@pytest.mark.skipif(memory._glibc() is None, reason="glibc only")
def test_a_real_heap_that_freed_more_than_it_may_keep_shrinks():
    glibc = memory._glibc()
    # whatever earlier tests left in this process's allocator: blocks come from the heap, and
    # free() itself gives nothing back, so the free heap is what the test frees
    glibc.mallopt(memory.M_MMAP_THRESHOLD, memory.LARGEST_MMAP_THRESHOLD)
    glibc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
    try:
        blocks = [torch.ones(16_000) for _ in range(6_000)]  # 64 KB each, from the heap: 384 MB
        before = resident_bytes()
        del blocks
        assert memory._free_heap_bytes(glibc) > memory.KEEP_FREE_BYTES
        heap(glibc).release()
        assert resident_bytes() < before - 200 * 2**20
    finally:
        glibc.mallopt(M_TRIM_THRESHOLD, 128 << 10)  # glibc's default
