"""The game's own payoffs: win/loss/draw (and forfeit penalties) as the reward."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from selfplay.api.reward import Reward, RewardOptions, RoleScores, TurnScores
from selfplay.api.types import Episode
from selfplay.plugins.hookspecs import hookimpl


class OutcomeOptions(RewardOptions):
    discount: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Per-turn discount from the end for this reward alone (default: none, "
        "and train.gamma applies as to every per-role reward).",
    )


class Outcome(Reward):
    """The game's payoffs per role: win/loss/draw, forfeit penalty and bonus."""

    name = "outcome"
    Options = OutcomeOptions

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.per_turn = self.options.discount is not None

    def __call__(self, episodes: Sequence[Episode]) -> list[RoleScores] | list[TurnScores]:
        if self.options.discount is None:
            return [{role: float(v) for role, v in ep.outcome.items()} for ep in episodes]
        return [self._discounted(ep, self.options.discount) for ep in episodes]

    @staticmethod
    def _discounted(episode: Episode, discount: float) -> TurnScores:
        """A turn followed by k more turns of its role earns ``discount**k * payoff``."""
        scores: TurnScores = []
        later: dict[str, int] = {}
        for turn in reversed(episode.turns):
            k = later.get(turn.role, 0)
            later[turn.role] = k + 1
            payoff = episode.outcome.get(turn.role)
            scores.append(None if payoff is None else float(payoff) * discount**k)
        return scores[::-1]


@hookimpl
def register_rewards(register):
    register("outcome", Outcome)
