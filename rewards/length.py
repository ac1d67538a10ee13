"""Brevity: a penalty that grows with each turn's length beyond a free allowance.

``score = -min(cap, max(0, length - free) / per)``: nothing up to ``free``, then ``-1`` for
every ``per`` tokens (or characters) more, never below ``-cap``. Turns without generated
tokens (scripted seats) are not scored when counting tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from selfplay.api.reward import Reward, RewardOptions, TurnScores
from selfplay.api.types import Episode, Turn
from selfplay.plugins.hookspecs import hookimpl


class LengthOptions(RewardOptions):
    unit: Literal["tokens", "chars"] = Field(
        default="tokens", description="Count generated tokens or characters of the text."
    )
    free: int = Field(default=0, ge=0, description="Length allowed without penalty.")
    per: float = Field(default=100.0, gt=0, description="Length over `free` that costs 1.")
    cap: float = Field(default=1.0, gt=0, description="Largest penalty of one turn.")


class Length(Reward):
    """Penalises long turns: -1 per `per` tokens beyond `free`, at most `cap`."""

    name = "length"
    Options = LengthOptions
    per_turn = True

    def __call__(self, episodes: Sequence[Episode]) -> list[TurnScores]:
        return [[self._score(turn) for turn in ep.turns] for ep in episodes]

    def _score(self, turn: Turn) -> float | None:
        opts = self.options
        if opts.unit == "tokens":
            if not turn.token_ids:
                return None
            length = len(turn.token_ids)
        else:
            length = len(turn.text)
        return -min(opts.cap, max(0, length - opts.free) / opts.per)


@hookimpl
def register_rewards(register):
    register("length", Length)
