"""Role-conditioned advantage estimation (RAE).

SPIRAL: Self-Play on Zero-Sum Games Incentivizes Reasoning via Multi-Agent Multi-Turn
Reinforcement Learning (Liu et al., 2025), section 3.3. One shared policy plays both roles of a
zero-sum game, whose roles face different expected returns (first-mover advantage). RAE keeps
an exponential moving-average baseline per game and role,

    b[G, p] <- alpha * b[G, p] + (1 - alpha) * R_p          A = R_p - b[G, p]

so each role's advantage is measured against that role's own expectation. The baseline
starts at the first batch's mean rather than at 0, so the first updates are not all one sign.

``per_opponent`` (ours, not SPIRAL's) keeps one baseline per game, role and opponent. When
the learner meets a mix of opponents (a pool with scripted players), one baseline per role
makes every move against a weak opponent look good and every move against a strong one
look bad; a baseline may depend on anything known before the move, and the opponent is.
Opponents are hashed into OPPONENT_BUCKETS slots per role (rare collisions only share a
baseline), so every process reduces the same fixed-shape tensor under DDP.

``per_state`` (ours too) measures each move against the mean return seen from its position
(core/algorithms/state_values.py), falling back to the role's baseline for positions seen once.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import torch
from pydantic import Field

from selfplay.api.estimator import Estimator, Reduce, Sample, local, rewards_tensor
from selfplay.api.options import Options
from selfplay.core.algorithms.state_values import StateValues

# baseline slots per role with ``per_opponent``; opponents are hashed into them
OPPONENT_BUCKETS = 64


class RAEOptions(Options):
    decay: float = Field(
        default=0.95, ge=0, lt=1, description="EMA decay of each baseline (0: this batch's mean)."
    )
    drop_zero: bool = Field(default=False, description="Drop samples whose advantage is 0.")
    per_opponent: bool = Field(
        default=False, description="One baseline per opponent too (for mixed opponent pools)."
    )
    per_state: bool = Field(
        default=False,
        description="Measure each move against the mean return from its position (its prompt).",
    )
    state_decay: float = Field(
        default=0.8, ge=0, le=1, description="Per-batch decay of each position's record."
    )
    state_prior: float = Field(
        default=1.0,
        gt=0,
        description="Weight of the role's baseline in a position's (in visits of the position).",
    )
    state_buckets: int = Field(
        default=8192, ge=1, description="Hashed position slots per role (a collision shares one)."
    )


class RAE(Estimator):
    """SPIRAL's role-conditioned advantage: the return minus an EMA baseline per game x role."""

    Options = RAEOptions
    name = "rae"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.decay = self.options.decay
        self.drop_zero = self.options.drop_zero
        self.per_opponent = self.options.per_opponent
        self.baselines: dict[str, float] = {}
        self.keys: list[str] = []  # every baseline key, from `bind`: the same on every process
        options = self.options
        self.states = (
            StateValues(options.state_buckets, options.state_decay, options.state_prior)
            if options.per_state
            else None
        )

    def bind(self, game: str, roles: Sequence[str]) -> None:
        slots = [f"@{b}" for b in range(OPPONENT_BUCKETS)] if self.per_opponent else [""]
        self.keys = [f"{game}/{role}{slot}" for role in roles for slot in slots]
        if self.states is not None:
            self.states.bind(roles)

    def key(self, sample: Sample) -> str:
        if not self.per_opponent:
            return f"{sample.game}/{sample.role}"
        slot = zlib.crc32(sample.opponent.encode()) % OPPONENT_BUCKETS
        return f"{sample.game}/{sample.role}@{slot}"

    def __call__(self, samples: Sequence[Sample], reduce: Reduce = local) -> list[float | None]:
        own = [self.key(s) for s in samples]
        keys = self.keys + sorted(set(own) - set(self.keys))
        rewards = rewards_tensor(samples)
        sums = []
        for key in keys:
            mine = torch.tensor([k == key for k in own], dtype=torch.bool)
            sums.append(torch.stack([rewards[mine].sum(), mine.sum().double()]))
        totals = reduce(torch.stack(sums)) if sums else torch.zeros(0, 2)
        for key, (total, count) in zip(keys, totals.tolist(), strict=True):
            if count == 0 or not math.isfinite(total):
                continue  # no process played this role (or a non-finite return): it stays
            mean = total / count
            previous = self.baselines.get(key)
            # the first batch sets the baseline, so early advantages are not all one sign
            self.baselines[key] = (
                mean if previous is None else (self.decay * previous + (1 - self.decay) * mean)
            )
        baselines = [self.baselines.get(k, math.nan) for k in own]
        if self.states is not None:
            baselines = self.states.baselines(samples, rewards, baselines, reduce)
        advantages = [s.reward - b for s, b in zip(samples, baselines, strict=True)]
        if self.drop_zero:
            return [a if abs(a) > 1e-8 else None for a in advantages]
        return list(advantages)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"baselines": dict(self.baselines)}
        if self.states is not None:
            state["positions"] = self.states.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # a non-finite baseline (saved by a release that let a NaN reward through) starts
        # afresh from the next batch's mean instead of poisoning every advantage after it
        self.baselines = {k: v for k, v in state["baselines"].items() if math.isfinite(v)}
        if self.states is not None and "positions" in state:
            self.states.load_state_dict(state["positions"])
