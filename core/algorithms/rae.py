"""Role-conditioned advantage estimation (RAE).

SPIRAL: Self-Play on Zero-Sum Games Incentivizes Reasoning via Multi-Agent Multi-Turn
Reinforcement Learning (Liu et al., 2025), section 3.3. One shared policy plays both roles of a
zero-sum game, whose roles face different expected returns (first-mover advantage). RAE keeps
an exponential moving-average baseline per game and role,

    b[G, p] <- alpha * b[G, p] + (1 - alpha) * R_p          A = R_p - b[G, p]

so each role's advantage is measured against that role's own expectation. The baseline
starts at the first batch's mean rather than at 0, so the first updates are not all one sign.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from selfplay.core.algorithms.base import Estimator, Reduce, Sample, local, rewards_tensor


class RAE(Estimator):
    def __init__(self, decay: float = 0.95, drop_zero: bool = False) -> None:
        if not 0 <= decay < 1:
            raise ValueError(f"rae decay must be in [0, 1), got {decay}.")
        self.decay = decay
        self.drop_zero = drop_zero
        self.baselines: dict[str, float] = {}
        self.keys: list[str] = []  # every game/role key, from `bind`: the same on every process

    def bind(self, game: str, roles: Sequence[str]) -> None:
        self.keys = [f"{game}/{role}" for role in roles]

    def __call__(self, samples: Sequence[Sample], reduce: Reduce = local) -> list[float | None]:
        present = {f"{s.game}/{s.role}" for s in samples}
        keys = self.keys + sorted(present - set(self.keys))
        rewards = rewards_tensor(samples)
        sums = []
        for key in keys:
            mine = torch.tensor([f"{s.game}/{s.role}" == key for s in samples], dtype=torch.bool)
            sums.append(torch.stack([rewards[mine].sum(), mine.sum().double()]))
        totals = reduce(torch.stack(sums)) if sums else torch.zeros(0, 2)
        for key, (total, count) in zip(keys, totals.tolist(), strict=True):
            if count == 0:
                continue  # no process played this role: its baseline stays
            mean = total / count
            previous = self.baselines.get(key)
            # the first batch sets the baseline, so early advantages are not all one sign
            self.baselines[key] = (
                mean if previous is None else (self.decay * previous + (1 - self.decay) * mean)
            )
        advantages = [s.reward - self.baselines[f"{s.game}/{s.role}"] for s in samples]
        if self.drop_zero:
            return [a if abs(a) > 1e-8 else None for a in advantages]
        return list(advantages)

    def state_dict(self) -> dict[str, Any]:
        return {"baselines": dict(self.baselines)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.baselines = dict(state["baselines"])
