"""The processes a run trains on, as one: its rank, and the sums and gathers that keep every
process's statistics and records the same (one process: as is)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed

from selfplay.api.types import Episode
from selfplay.core.machine.memory import Heap


class Processes:
    """The run's processes as one: sums and gathers over all of them; ``heap`` is this
    process's (core/machine/memory.py), handed back to the system with ``hardware.malloc_trim``."""

    def __init__(self, fabric: Any, trim: bool = False) -> None:
        self.fabric = fabric
        self.rank, self.world_size = fabric.global_rank, fabric.world_size
        self.main = self.rank == 0
        self.heap = Heap(trim)

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` summed over every process (statistics of the estimator, the rewards)."""
        if self.world_size == 1:
            return tensor
        # NCCL reduces only tensors on the GPU; the statistics live on the CPU
        total = self.fabric.all_reduce(tensor.float().to(self.fabric.device), reduce_op="sum")
        return total.cpu().double()

    def gather(self, items: Sequence[Any]) -> list[Any]:
        """Every process's ``items`` (picklable), in rank order; every process calls this."""
        if self.world_size == 1:
            return list(items)
        gathered: list[Any] = [None] * self.world_size
        torch.distributed.all_gather_object(gathered, list(items))
        return [item for part in gathered for item in part]

    def gather_episodes(self, episodes: list[Episode]) -> list[Episode]:
        """Every process's episodes, in rank order (sent as plain dicts)."""
        if self.world_size == 1:
            return episodes
        return [Episode.from_dict(d) for d in self.gather([e.to_dict() for e in episodes])]

    def minibatches(self, count: int, size: int) -> int:
        """Optimiser steps for ``count`` items in minibatches of ``size``: the same on every
        process (the backward pass is collective), so the process with fewest items decides."""
        fewest = count
        if self.world_size > 1:
            counts = self.fabric.all_gather(torch.tensor(count, device=self.fabric.device))
            fewest = int(counts.min())
        return 0 if fewest == 0 else -(-fewest // size)

    def broadcast(self, value: Any) -> Any:
        """Process 0's ``value`` on every process."""
        return self.fabric.broadcast(value, src=0)

    def barrier(self) -> None:
        self.fabric.barrier()
