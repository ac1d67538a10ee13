"""An Elo curriculum: keep the learner's expected win rate inside a band (default 30-70%).

Every snapshot and scripted member carries an Elo rating, updated after each match it plays
against the learner or another member; a snapshot starts at the learner's rating when it
joins. Each opponent seat goes to a member whose expected score against the learner lies in
the band, chosen uniformly among those; when none does, to the member closest to the band.
Too-easy and too-hard opponents teach little; the band is where the learning signal is.

`BandController` (in ``selfplay.api.ratings``, re-exported here) is the same rule as a
difficulty knob for games that generate their own tasks: raise the requested difficulty x1.2
when the solver wins more than the band's top, lower it x0.8 below its bottom.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from pydantic import Field, model_validator

from selfplay.api.options import Options
from selfplay.api.ratings import BandController, Ratings, check_band, score_of
from selfplay.api.sampler import LEARNER, OpponentSampler
from selfplay.plugins.hookspecs import hookimpl


class EloOptions(Options):
    low: float = Field(default=0.3, ge=0, le=1, description="Lowest expected score to face.")
    high: float = Field(default=0.7, ge=0, le=1, description="Highest expected score to face.")
    k: float = Field(default=16.0, gt=0, description="Elo K-factor of the ratings.")

    @model_validator(mode="after")
    def _band(self) -> EloOptions:
        check_band(self.low, self.high)
        return self


class EloSampler(OpponentSampler):
    Options = EloOptions
    name = "elo"
    uses_pool = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.low, self.high = self.options.low, self.options.high
        self.elo = Ratings(k=self.options.k)

    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        if not members:
            return LEARNER
        inside = [m for m in members if self.low <= self.learner_expects(m) <= self.high]
        if inside:
            return rng.choice(inside)
        return min(members, key=lambda m: self._distance(self.learner_expects(m)))

    def learner_expects(self, member: str) -> float:
        """The learner's expected score against ``member`` (1 = sure win)."""
        return self.elo.expected(LEARNER, member)

    def _distance(self, expected: float) -> float:
        return max(self.low - expected, expected - self.high, 0.0)

    def wanted_matches(self, members: Sequence[str]) -> list[tuple[str, str]]:
        for member in members:  # a new snapshot starts where the learner stands
            if member not in self.elo.elo:
                self.elo.add(member, self.elo.rating(LEARNER))
        return []

    def update(self, episodes: Sequence[Any]) -> None:
        for episode in episodes:
            holders = list(episode.seats.items())
            if len(holders) != 2 or episode.outcome is None:
                continue
            (ra, a), (rb, b) = holders
            if a == b:
                continue
            pa, pb = episode.outcome[ra], episode.outcome[rb]
            self.elo.record(a, b, score_of(pa - pb))

    def state_dict(self) -> dict[str, Any]:
        return {"elo": self.elo.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.elo.load_state_dict(state["elo"])


__all__ = ["BandController", "EloOptions", "EloSampler"]


@hookimpl
def register_opponent_samplers(register):
    register("elo", EloSampler)
