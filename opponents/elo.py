"""An Elo curriculum: keep the learner's expected win rate inside a band (default 30-70%).

Every snapshot and scripted member carries an Elo rating, updated after each match it plays
against the learner or another member; a snapshot starts at the learner's rating when it
joins. Each opponent seat goes to a member whose expected score against the learner lies in
the band, chosen uniformly among those; when none does, to the member closest to the band.
Too-easy and too-hard opponents teach little; the band is where the learning signal is.

`BandController` is the same rule as a difficulty knob for games that generate their own
tasks: raise the requested difficulty x1.2 when the solver wins more than the band's top,
lower it x0.8 below its bottom.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from selfplay.api.sampler import LEARNER, OpponentSampler
from selfplay.opponents.ratings import Ratings, score_of
from selfplay.plugins.hookspecs import hookimpl


def _check_band(low: float, high: float) -> None:
    if not 0 <= low < high <= 1:
        raise ValueError(f"the band needs 0 <= low < high <= 1, got low={low}, high={high}.")


@dataclass
class BandController:
    """Scales a difficulty by ``up`` above the band's top win rate, ``down`` below its bottom."""

    low: float = 0.3
    high: float = 0.7
    up: float = 1.2
    down: float = 0.8

    def __post_init__(self) -> None:
        _check_band(self.low, self.high)

    def adjust(self, difficulty: float, win_rate: float) -> float:
        if win_rate > self.high:
            return difficulty * self.up
        if win_rate < self.low:
            return difficulty * self.down
        return difficulty


class EloSampler(OpponentSampler):
    uses_pool = True

    def __init__(self, low: float = 0.3, high: float = 0.7, k: float = 16.0) -> None:
        _check_band(low, high)
        self.low, self.high = low, high
        self.elo = Ratings(k=k)

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


@hookimpl
def register_opponent_samplers(register):
    register("elo", EloSampler)
