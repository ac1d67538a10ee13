"""The pool of past selves, and the sampler that plays against it.

Training only against your latest self cycles and forgets (A beats B beats C beats A); keeping
snapshots of past selves as opponents is the textbook fix. The pool is plain bookkeeping of
names: the loop writes each snapshot's weights to the run folder and loads them on demand.

Eviction rule: the pool keeps at most ``size`` snapshots. The starting policy (snapshot 0) is
never evicted; when a new snapshot would exceed the size, the oldest other snapshot goes.
Scripted players named in ``scripted`` are permanent members besides the snapshots; so are
served models named there (``openai:http://HOST:PORT/v1#MODEL``, e.g. a LoRA snapshot loaded on
a server with ``?lora=PATH``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from selfplay.api.options import Options
from selfplay.api.sampler import LEARNER, OpponentSampler, is_served, scripted
from selfplay.plugins.hookspecs import hookimpl


@dataclass
class Pool:
    """Members by name, oldest snapshot first; scripted members listed before them."""

    size: int = 8
    scripted: list[str] = field(default_factory=list)
    snapshots: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.size < 2:
            raise ValueError(
                f"pool.size must be at least 2 (the starting policy and one more), got {self.size}."
            )
        self.scripted = [
            p if p.startswith("scripted:") or is_served(p) else scripted(p) for p in self.scripted
        ]

    @property
    def members(self) -> list[str]:
        return [*self.scripted, *self.snapshots]

    def add(self, name: str) -> list[str]:
        """Add a snapshot; returns the names evicted to keep the size (see the module doc)."""
        if name in self.snapshots:
            return []
        self.snapshots.append(name)
        evicted = []
        while len(self.snapshots) > self.size:
            evicted.append(self.snapshots.pop(1))  # index 0 is the starting policy
        return evicted

    def state_dict(self) -> dict[str, Any]:
        return {"snapshots": list(self.snapshots)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.snapshots = list(state["snapshots"])


class PoolOptions(Options):
    p_latest: float = Field(
        default=0.8, ge=0, le=1, description="Probability (0 to 1) that a seat goes to the learner."
    )
    weighting: Literal["uniform", "recency"] = Field(
        default="uniform", description="How members are drawn: alike, or recent ones more often."
    )


class PoolSampler(OpponentSampler):
    """The latest learner with probability ``p_latest``, else a pool member.

    ``weighting='uniform'`` draws members alike; ``'recency'`` weights the k-th oldest member
    by k, so recent selves come up more often while old ones are never dropped.
    """

    Options = PoolOptions
    name = "pool"
    positional = "p_latest"
    uses_pool = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.p_latest, self.weighting = self.options.p_latest, self.options.weighting

    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        if not members or rng.random() < self.p_latest:
            return LEARNER
        weights = self._weights(len(members))
        return rng.choices(list(members), weights=weights)[0]

    def mixture(self, members: Sequence[str]) -> dict[str, float] | None:
        weights = self._weights(len(members))
        total = sum(weights)
        return {m: w / total for m, w in zip(members, weights, strict=True)} if members else None

    def _weights(self, n: int) -> list[float]:
        return [1.0] * n if self.weighting == "uniform" else [float(k) for k in range(1, n + 1)]


@hookimpl
def register_opponent_samplers(register):
    register("pool", PoolSampler)
