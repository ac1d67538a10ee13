"""A pass-rate curriculum: draw tasks with weight P0(d)·(1 − p(d)), floored.

The textbook formula for proposer games: ``P*(d) ∝ P0(d)·(1 − p(d))``, where ``P0`` is the
prior share of difficulty (or task) ``d`` and ``p(d)`` the solver's current pass rate on it.
Mastered tasks fade out, unsolved ones stay in. The factor ``1 − p`` is floored at ``floor``
so that nothing is starved for good: a task the solver happens to pass a few times keeps a
chance to come back, and an estimate made on little data can recover.

Pass rates are smoothed (``(passes + 1) / (attempts + 2)``), so an unseen task counts as 0.5.
Keys are strings (a difficulty level, a problem id); the state round-trips through JSON.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any


class PassRateCurriculum:
    """Counts passes per key and turns them into sampling weights."""

    def __init__(self, floor: float = 0.05) -> None:
        if not 0 < floor <= 1:
            raise ValueError(f"the curriculum floor must be in (0, 1], got {floor}.")
        self.floor = floor
        self.passes: dict[str, int] = {}
        self.attempts: dict[str, int] = {}

    def record(self, key: str, passed: bool) -> None:
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.passes[key] = self.passes.get(key, 0) + int(passed)

    def pass_rate(self, key: str) -> float:
        return (self.passes.get(key, 0) + 1) / (self.attempts.get(key, 0) + 2)

    def weights(self, keys: Sequence[str], prior: Mapping[str, float] | None = None) -> list[float]:
        """``P0(k)·max(1 − p(k), floor)`` per key (``prior`` defaults to uniform)."""
        weights = []
        for key in keys:
            p0 = 1.0 if prior is None else prior[key]
            if p0 < 0:
                raise ValueError(f"the prior weight of {key!r} is negative ({p0}).")
            weights.append(p0 * max(1.0 - self.pass_rate(key), self.floor))
        return weights

    def sample(
        self, keys: Sequence[str], rng: random.Random, prior: Mapping[str, float] | None = None
    ) -> str:
        if not keys:
            raise ValueError("the curriculum has no keys to sample from.")
        weights = self.weights(keys, prior)
        if sum(weights) <= 0:
            raise ValueError("every key has prior weight 0; give some key a positive prior.")
        return rng.choices(list(keys), weights=weights)[0]

    def state_dict(self) -> dict[str, Any]:
        return {"floor": self.floor, "passes": dict(self.passes), "attempts": dict(self.attempts)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.floor = float(state["floor"])
        self.passes = {str(k): int(v) for k, v in state["passes"].items()}
        self.attempts = {str(k): int(v) for k, v in state["attempts"].items()}
