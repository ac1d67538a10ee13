"""PSRO: Policy-Space Response Oracles (Lanctot et al., 2017) over the pool of snapshots.

PSRO repeats three phases; here they map onto the loop like this:

1. Response (the oracle): the learner trains against opponents drawn from the meta-strategy
   sigma over the pool. This is the ordinary training iteration, with ``sample`` drawing
   from sigma.
2. Expansion: every ``pool.snapshot_every`` iterations the learner's snapshot joins the pool
   (the loop adds it).
3. Evaluation and meta-solve: ``wanted_matches`` asks for matches between the new member and
   every member (the empirical payoff matrix grows by one row and column); the league records
   their results in its payoff table (api/ratings/payoffs.py, ``self.payoff_table``), the one table
   crossplay.csv shows, and ``update`` has the meta-solver turn the matrix into the next sigma.

Meta-solvers come from `selfplay.opponents.meta_solvers` by name: ``uniform`` (fictitious
play), ``nash`` (linear programming), ``prd`` (projected replicator dynamics), ``rm`` (regret
matching). ``--opponent psro:nash``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from selfplay.api.options import Options
from selfplay.api.sampler import LEARNER, OpponentSampler
from selfplay.opponents.meta_solvers import META_SOLVERS, solve
from selfplay.plugins.hookspecs import hookimpl


class PSROOptions(Options):
    meta_solver: str = Field(
        default="nash", description="uniform (fictitious play), nash, prd or rm: psro:nash."
    )
    p_latest: float = Field(
        default=0.0, ge=0, le=1, description="Probability (0 to 1) that a seat goes to the learner."
    )
    solver_options: dict[str, float] = Field(
        default_factory=dict, description="Options of the meta-solver, e.g. {iterations: 2000}."
    )

    @field_validator("meta_solver")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in META_SOLVERS:
            raise ValueError(
                f"unknown meta-solver {value!r}; choose one of "
                f"{', '.join(sorted(META_SOLVERS))}, e.g. --opponent psro:nash"
            )
        return value


class PSRO(OpponentSampler):
    Options = PSROOptions
    name = "psro"
    positional = "meta_solver"
    uses_pool = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.meta_solver, self.p_latest = self.options.meta_solver, self.options.p_latest
        self.sigma: dict[str, float] = {}
        self.members: list[str] = []  # the pool as of the last evaluation

    # ---- phase 1: the response is trained against sigma ------------------------------------

    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        if not members or rng.random() < self.p_latest:
            return LEARNER
        weights = [self.sigma.get(m, 0.0) for m in members]
        if sum(weights) <= 0:
            weights = [1.0] * len(members)
        return rng.choices(list(members), weights=weights)[0]

    def mixture(self, members: Sequence[str]) -> dict[str, float] | None:
        if not members:
            return None
        total = sum(self.sigma.get(m, 0.0) for m in members)
        if total <= 0:
            return {m: 1 / len(members) for m in members}
        return {m: self.sigma.get(m, 0.0) / total for m in members}

    # ---- phases 2 and 3: the pool grew; evaluate the new member, then meta-solve -----------

    def wanted_matches(self, members: Sequence[str]) -> list[tuple[str, str]]:
        self.members = list(members)
        met = self.payoff_table.met if self.payoff_table is not None else lambda a, b: False
        return [(a, b) for i, a in enumerate(members) for b in members[i + 1 :] if not met(a, b)]

    def update(self, episodes: Sequence[Any]) -> None:
        """Solve again when members played each other (the league has recorded the matches)."""
        played = [
            episode
            for episode in episodes
            if len(episode.seats) == 2
            and episode.outcome is not None
            and LEARNER not in episode.seats.values()  # training: the learner is no member
            and len(set(episode.seats.values())) == 2
        ]
        if played and self.payoff_table is not None:
            self._solve(self.members or self._known_members())

    def _solve(self, members: Sequence[str]) -> None:
        matrix = self.matrix(members)
        weights = solve(self.meta_solver, matrix, **self.options.solver_options)
        self.sigma = {m: float(w) for m, w in zip(members, weights, strict=True)}

    def matrix(self, members: Sequence[str]) -> list[list[float]]:
        """Mean payoff of row member against column member (0 where no match was played)."""
        assert self.payoff_table is not None, "the league hands PSRO its payoff table"
        return self.payoff_table.matrix(members)

    def _known_members(self) -> list[str]:
        assert self.payoff_table is not None
        pairs = [(a, b) for a, b in self.payoff_table.pairs if LEARNER not in (a, b)]
        return sorted({a for a, _ in pairs})

    def metrics(self) -> dict[str, float]:
        return {f"psro/sigma/{m}": w for m, w in self.sigma.items()}

    def state_dict(self) -> dict[str, Any]:
        return {"sigma": dict(self.sigma), "members": list(self.members)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """An older checkpoint's own payoffs are left: the league's table holds the same."""
        self.sigma = dict(state["sigma"])
        self.members = list(state["members"])


@hookimpl
def register_opponent_samplers(register):
    register("psro", PSRO)
