"""What a run trains with, as one typed record, and the processes it trains on.

`RunState` holds every part an iteration works with — the game, the learner and its model,
optimiser and reference, the sampler, the rewards, the estimator, the objective, the league,
the callbacks, the random generators and the counters — and says what a checkpoint keeps of
them (``state_dict``, in Lightning Fabric's style: the model and the optimiser go in as
objects, Fabric saves and loads them; everything else is plain data). The run
(core/run/trainer.py) builds it; the iteration (core/train/loop.py), resume, faults and the
run's checks take it.

`Processes` is the run's view of its processes: its rank, and the sums and gathers that keep
every process's statistics and records the same.
"""

from __future__ import annotations

import contextlib
import ctypes
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.distributed

from selfplay.api.callback import Callback
from selfplay.api.game import Game
from selfplay.api.run_view import RunView
from selfplay.api.sampler import LEARNER, OpponentSampler
from selfplay.api.types import Episode
from selfplay.core.config import RunConfig
from selfplay.core.train.league import League
from selfplay.core.train.learners import Learner
from selfplay.core.train.seating import Seats


@dataclass
class Progress:
    """Counters that a checkpoint carries besides the model and optimiser."""

    iteration: int = 0
    episodes_bytes: int = 0
    seconds: float = 0.0  # training time up to ``iteration``, over every process that ran it
    before: dict[str, dict[str, Any]] = field(default_factory=dict)
    before_tasks: dict[str, float] = field(default_factory=dict)


@dataclass
class RunState:
    """Every part of a run that an iteration uses or a checkpoint keeps.

    ``learners`` are the policies being trained (core/train/learners.py): one shared policy,
    or one per group of roles; ``learner``, ``model``, ``optimizer``, ``reference``,
    ``updater``, ``objective``, ``estimator`` and ``search`` are the first one's."""

    config: RunConfig
    game: Game
    learners: list[Learner]
    sampler: OpponentSampler
    reward: Any  # the reward pipeline (core/reward_pipeline.py): called, bound, checkpointed
    callbacks: list[tuple[str, Callback]]
    rng: random.Random
    generator: torch.Generator
    seats: Seats
    league: League
    view: RunView
    progress: Progress = field(default_factory=Progress)

    @property
    def first(self) -> Learner:
        return self.learners[0]

    @property
    def shared(self) -> bool:
        """Whether one shared policy plays every role (no learners named)."""
        return len(self.learners) == 1 and self.learners[0].name == LEARNER

    learner = property(lambda self: self.first.policy)
    model = property(lambda self: self.first.model)  # Fabric's wrapper; ``.module`` is plain
    optimizer = property(lambda self: self.first.optimizer)
    reference = property(lambda self: self.first.reference)
    updater = property(lambda self: self.first.updater)
    objective = property(lambda self: self.first.objective)
    estimator = property(lambda self: self.first.estimator)
    search = property(lambda self: self.first.search)

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of the run (the checkpoint adds each model, whole or its
        adapters, the reference and the config's hash: core/run/resume.py). A run of several
        learners keeps each one's entries under ``learners/NAME`` and its optimiser at the top
        level as ``optimizer/NAME`` (where Fabric saves objects)."""
        state: dict[str, Any] = {
            "sampler": self.sampler.state_dict(),
            "league": self.league.state_dict(),
            "reward": self.reward.state_dict(),
            "callbacks": {name: callback.state_dict() for name, callback in self.callbacks},
            "rng": rng_state(self.rng, self.generator),
            "progress": self.progress.__dict__.copy(),
        }
        if self.shared:
            return {"optimizer": self.optimizer, **_learner_state(self.first), **state}
        for learner in self.learners:
            state[f"optimizer/{learner.name}"] = learner.optimizer
            state[f"learners/{learner.name}"] = _learner_state(learner)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back what `state_dict` kept (the models and optimisers are loaded by Fabric).
        Entries added since the first release are optional, so older checkpoints load."""
        if self.shared:
            _load_learner_state(self.first, state)
        else:
            for learner in self.learners:
                _load_learner_state(learner, state[f"learners/{learner.name}"])
        self.sampler.load_state_dict(state["sampler"])
        self.league.load_state_dict(state["league"])
        self.reward.load_state_dict(state["reward"])
        saved_callbacks = state.get("callbacks", {})
        for name, callback in self.callbacks:
            if name in saved_callbacks:
                callback.load_state_dict(saved_callbacks[name])
        restore_rng(state["rng"], self.rng, self.generator)
        self.progress = Progress(**state["progress"])


def _learner_state(learner: Learner) -> dict[str, Any]:
    updater = learner.updater
    return {
        "estimator": learner.estimator.state_dict(),
        "objective": learner.objective.state_dict(),
        "nonfinite_streak": updater.nonfinite_streak,
        "weight_average": updater.average.state_dict() if updater.average else {},
    }


def _load_learner_state(learner: Learner, state: dict[str, Any]) -> None:
    learner.reference.load_state_dict(state)
    learner.estimator.load_state_dict(state["estimator"])
    learner.objective.load_state_dict(state.get("objective", {}))
    learner.updater.nonfinite_streak = state["nonfinite_streak"]
    if learner.updater.average is not None:
        learner.updater.average.load_state_dict(state.get("weight_average") or {})


def rng_state(run_rng: random.Random, generator: torch.Generator) -> dict[str, Any]:
    return {
        "run": run_rng.getstate(),
        "python": random.getstate(),
        "numpy": _numpy_state(),
        "torch": torch.get_rng_state(),
        "update": generator.get_state(),
    }


def restore_rng(state: dict[str, Any], run_rng: random.Random, generator: torch.Generator) -> None:
    run_rng.setstate(state["run"])
    random.setstate(state["python"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    generator.set_state(state["update"])


def _numpy_state() -> tuple[Any, ...]:
    # plain Python values: checkpoints load with torch.load(weights_only=True)
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return name, keys.tolist(), int(pos), int(has_gauss), float(cached)


class OutOfMemory(RuntimeError):
    """The update or a rollout could not allocate memory (exit code 6); the message names the
    setting to lower and its value, and the run keeps its last checkpoint."""


class Processes:
    """The run's processes as one: sums and gathers over all of them (one process: as is).

    The heap (``hardware.malloc_trim``; glibc only, other C libraries are left alone): glibc
    keeps what tensors free for reuse, so a process's resident memory climbs through an update
    of many micro-batches (SmolLM2-135M under LoRA gained 50-100 MB with each one-row
    micro-batch). ``release()`` hands what is free back to the system (``malloc_trim``) once
    more than ``KEEP_FREE_BYTES`` is free: before the first of a step's backward passes (when
    it has several) and after each but the last, after each update and after each rollout;
    from an update's first pass on, blocks of 4 MB and more also go straight back when freed
    (``mallopt``'s mmap threshold, restored by ``updating()``). Below that, and in an update of
    one pass, glibc keeps what it has, because memory handed back costs page faults when it is
    touched again: trimming after every phase, and the threshold in every update, made the peer
    race's short iterations 1.2-1.5x slower.
    """

    def __init__(self, fabric: Any, trim: bool = False) -> None:
        self.fabric = fabric
        self.rank, self.world_size = fabric.global_rank, fabric.world_size
        self.main = self.rank == 0
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


KEEP_FREE_BYTES = 256 << 20  # free heap glibc may keep; beyond it, it goes back
M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
UPDATE_MMAP_THRESHOLD = 4 << 20
LARGEST_MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic threshold on 64-bit systems
_MALLINFO2 = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks")


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


def out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocation that failed (CPU or GPU)."""
    if isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError":
        return True
    text = str(err).lower()
    return isinstance(err, RuntimeError) and (
        "can't allocate memory" in text or "out of memory" in text
    )
