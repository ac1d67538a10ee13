"""A linear function of the game's `signals` (turns used, invalid attempts, hints asked, ...).

The middle tier of reward density between a bare win/loss and a per-step judge: a game reports
what happened in numbers, and ``bias + sum(coefficient * signal)`` rewards or penalises it,
e.g. ``{"hints": -0.1}`` so a solver learns to ask for fewer hints. The score goes to every
role; a role suffix (``game-signal@solver``) keeps it to one.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, field_validator

from selfplay.api.reward import Reward, RewardError, RewardOptions, RoleScores
from selfplay.api.types import Episode
from selfplay.plugins.hookspecs import hookimpl


class GameSignalOptions(RewardOptions):
    coefficients: dict[str, float] = Field(
        default_factory=dict,
        validate_default=True,
        description="Weight per signal name, e.g. {turns: -0.05, hints: -0.1}.",
    )
    bias: float = Field(default=0.0, description="Constant added to the sum.")

    @field_validator("coefficients")
    @classmethod
    def _not_empty(cls, value: dict[str, float]) -> dict[str, float]:
        if not value:
            raise ValueError(
                "give at least one coefficient, e.g. "
                "--set reward_options.game-signal.coefficients={turns: -0.05}"
            )
        return value


class GameSignal(Reward):
    """bias + sum of coefficient * signal over the game's signals, for every role."""

    name = "game-signal"
    Options = GameSignalOptions

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self._missing = 0

    def __call__(self, episodes: Sequence[Episode]) -> list[RoleScores]:
        self._check_names(episodes)
        self._missing = 0
        scores: list[RoleScores] = []
        for ep in episodes:
            value = self._value(ep)
            self._missing += value is None
            scores.append(dict.fromkeys(ep.seats, value))
        return scores

    def counters(self) -> dict[str, float]:
        return {"missing": float(self._missing)}

    def _value(self, episode: Episode) -> float | None:
        """None when this match did not report one of the signals (does not apply)."""
        coefficients = self.options.coefficients
        if not all(name in episode.signals for name in coefficients):
            return None
        total = sum(c * float(episode.signals[name]) for name, c in coefficients.items())
        return self.options.bias + total

    def _check_names(self, episodes: Sequence[Episode]) -> None:
        """A signal that no match reports is a misspelt name, not a missing value."""
        if not episodes:
            return
        reported = set().union(*(ep.signals for ep in episodes))
        unknown = sorted(set(self.options.coefficients) - reported)
        if unknown:
            raise RewardError(
                f"game-signal: {episodes[0].game} reports no signal {', '.join(unknown)}; "
                f"its signals are: {', '.join(sorted(reported)) or 'none'}."
            )


@hookimpl
def register_rewards(register):
    register("game-signal", GameSignal)
