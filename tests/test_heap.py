"""The heap goes back to the system only when glibc keeps more than it may (``release``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from selfplay.core.train import state


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


def processes(glibc: object | None) -> state.Processes:
    made = state.Processes(SimpleNamespace(global_rank=0, world_size=1), trim=False)
    made.glibc = glibc
    return made


def test_free_heap_goes_back_only_beyond_what_glibc_may_keep():
    kept = FakeGlibc(state.KEEP_FREE_BYTES - 1)
    processes(kept).release()
    assert kept.trims == 0
    beyond = FakeGlibc(state.KEEP_FREE_BYTES + 1)
    run = processes(beyond)
    run.release()
    with run.updating():
        pass
    assert beyond.trims == 2


def test_the_mmap_threshold_is_lowered_only_in_an_update_of_several_passes():
    glibc = FakeGlibc(0)
    run = processes(glibc)
    with run.updating():  # one backward pass: nothing between passes
        pass
    assert glibc.mallopts == []
    with run.updating():
        run.release()  # before the first of several passes, and between two
        run.release()
    lowered = (state.M_MMAP_THRESHOLD, state.UPDATE_MMAP_THRESHOLD)
    assert glibc.mallopts == [lowered, (state.M_MMAP_THRESHOLD, state.LARGEST_MMAP_THRESHOLD)]
    run.release()  # after a rollout
    assert len(glibc.mallopts) == 2


def test_without_malloc_trim_nothing_is_called():
    processes(None).release()  # hardware.malloc_trim=false, or not glibc


def resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * 4096


@pytest.mark.skipif(state._glibc() is None, reason="glibc only")
def test_a_real_heap_that_freed_more_than_it_may_keep_shrinks():
    glibc = state._glibc()
    blocks = [torch.ones(16_000) for _ in range(6_000)]  # 64 KB each, from the heap: 384 MB
    before = resident_bytes()
    del blocks
    assert state._free_heap_bytes(glibc) > state.KEEP_FREE_BYTES
    processes(glibc).release()
    assert resident_bytes() < before - 200 * 2**20
