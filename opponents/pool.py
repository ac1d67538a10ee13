"""The pool of past selves, and the sampler that plays against it.

Training only against your latest self cycles and forgets (A beats B beats C beats A); keeping
snapshots of past selves as opponents is the textbook fix. The pool is plain bookkeeping of
names: the loop writes each snapshot's weights to the run folder and loads them on demand.

Eviction rule: the pool keeps at most ``size`` snapshots. The starting policy (snapshot 0) is
never evicted; when a new snapshot would exceed the size, the oldest other snapshot goes.
Scripted players named in ``scripted`` are permanent members besides the snapshots; so are
served models named there (``openai:http://HOST:PORT/v1#MODEL``, e.g. a LoRA snapshot loaded on
a server with ``?lora=PATH``).

Prioritised fictitious self-play (AlphaStar, Vinyals et al. 2019; ``weighting='pfsp'``) draws
a member with weight ``(1 - p) ** pfsp_power``, where ``p`` is the learner's recent score
against it (won 1, drawn 0.5, lost 0): the selves the learner still loses to come up most, and
the ones it always beats almost never.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from selfplay.api.options import Options
from selfplay.api.ratings import score_of
from selfplay.api.sampler import LEARNER, OpponentSampler
from selfplay.plugins.hookspecs import hookimpl


class PoolOptions(Options):
    p_latest: float = Field(
        default=0.8, ge=0, le=1, description="Probability (0 to 1) that a seat goes to the learner."
    )
    weighting: Literal["uniform", "recency", "pfsp"] = Field(
        default="uniform",
        description="How members are drawn: alike, recent ones more often, or (pfsp) the ones "
        "the learner still loses to more often.",
    )
    pfsp_power: float = Field(
        default=2.0,
        gt=0,
        description="With weighting=pfsp, a member's weight is (1 - p) ** pfsp_power, p the "
        "learner's recent score against it (2: AlphaStar's 'hard' weighting).",
    )


# PFSP's record of a member: each iteration keeps this share of the matches counted before it,
# so the score follows the learner as it improves (about the last 10 iterations count)
PFSP_MEMORY = 0.9
# an unplayed member counts as one drawn match: p = 0.5 until it has been played
PFSP_PRIOR = 1.0


class PoolSampler(OpponentSampler):
    """The latest learner with probability ``p_latest``, else a pool member.

    ``weighting='uniform'`` draws members alike; ``'recency'`` weights the k-th oldest member
    by k, so recent selves come up more often while old ones are never dropped; ``'pfsp'``
    weights each by ``(1 - p) ** pfsp_power`` (see the module doc), all alike while every
    weight is 0.
    """

    Options = PoolOptions
    name = "pool"
    positional = "p_latest"
    uses_pool = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.p_latest, self.weighting = self.options.p_latest, self.options.weighting
        # pfsp: member -> [learner's score, matches], both decayed by PFSP_MEMORY per update
        self.record: dict[str, list[float]] = {}

    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        if not members or rng.random() < self.p_latest:
            return LEARNER
        weights = self._weights(members)
        return rng.choices(list(members), weights=weights)[0]

    def mixture(self, members: Sequence[str]) -> dict[str, float] | None:
        weights = self._weights(members)
        total = sum(weights)
        return {m: w / total for m, w in zip(members, weights, strict=True)} if members else None

    def learner_score(self, member: str) -> float:
        """The learner's recent score against ``member``: 1 always won, 0 always lost."""
        score, matches = self.record.get(member, (0.0, 0.0))
        return (score + 0.5 * PFSP_PRIOR) / (matches + PFSP_PRIOR)

    def update(self, episodes: Sequence[Any]) -> None:
        if self.weighting != "pfsp":
            return
        for entry in self.record.values():
            entry[0] *= PFSP_MEMORY
            entry[1] *= PFSP_MEMORY
        for episode in episodes:
            seats = episode.seats
            if episode.outcome is None or list(seats.values()).count(LEARNER) != 1:
                continue
            mine = next(role for role, holder in seats.items() if holder == LEARNER)
            for role, holder in seats.items():
                if holder != LEARNER:
                    entry = self.record.setdefault(holder, [0.0, 0.0])
                    entry[0] += score_of(episode.outcome[mine] - episode.outcome[role])
                    entry[1] += 1.0

    def wanted_matches(self, members: Sequence[str]) -> list[tuple[str, str]]:
        """None; the pool changed, so the record forgets the members it evicted."""
        self.record = {m: entry for m, entry in self.record.items() if m in members}
        return []

    def metrics(self) -> dict[str, float]:
        return {f"pfsp/score/{m}": self.learner_score(m) for m in self.record}

    def state_dict(self) -> dict[str, Any]:
        return {"record": {m: list(entry) for m, entry in self.record.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.record = {m: list(entry) for m, entry in state.get("record", {}).items()}

    def _weights(self, members: Sequence[str]) -> list[float]:
        n = len(members)
        if self.weighting == "uniform":
            return [1.0] * n
        if self.weighting == "recency":
            return [float(k) for k in range(1, n + 1)]
        power = self.options.pfsp_power
        weights = [(1.0 - self.learner_score(m)) ** power for m in members]
        return weights if sum(weights) > 0 else [1.0] * n


@hookimpl
def register_opponent_samplers(register):
    register("pool", PoolSampler)
