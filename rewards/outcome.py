"""The game's own payoffs: win/loss/draw (and forfeit penalties) as the reward."""

from __future__ import annotations

from collections.abc import Sequence

from selfplay.core.types import Episode
from selfplay.plugins.hookspecs import hookimpl
from selfplay.rewards.base import Reward, RoleScores


class Outcome(Reward):
    name = "outcome"

    def __call__(self, episodes: Sequence[Episode]) -> list[RoleScores]:
        return [{role: float(v) for role, v in ep.outcome.items()} for ep in episodes]


@hookimpl
def register_rewards(register):
    register("outcome", Outcome)
