"""Penalties for form: an answer missing its format (`format`) or any invalid move (`invalid`).

Both score every turn: ``penalty`` where the turn failed, ``bonus`` (0 by default) where it did
not. `format` asks the game whether the text holds an answer span at all (``[4]`` in
tic-tac-toe), so an illegal but well-formed move is not a format error; `invalid` reads the
turn's ``valid`` flag, so it also penalises illegal moves.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from selfplay.api.game import InvalidAction
from selfplay.api.reward import Reward, RewardOptions, TurnScores
from selfplay.api.types import Episode, Turn
from selfplay.plugins.hookspecs import hookimpl


class PenaltyOptions(RewardOptions):
    penalty: float = Field(default=-1.0, description="Score of a turn that fails the check.")
    bonus: float = Field(default=0.0, description="Score of a turn that passes it.")


class _TurnCheck(Reward):
    Options = PenaltyOptions
    per_turn = True

    def __call__(self, episodes: Sequence[Episode]) -> list[TurnScores]:
        opts = self.options
        return [
            [opts.bonus if self.passes(turn) else opts.penalty for turn in ep.turns]
            for ep in episodes
        ]

    def passes(self, turn: Turn) -> bool:
        raise NotImplementedError


class Format(_TurnCheck):
    """Penalises a turn whose text holds no answer in the game's format (e.g. [4])."""

    name = "format"

    def passes(self, turn: Turn) -> bool:
        try:
            self.game().parse(turn.text)
        except InvalidAction:
            return False
        return True


class Invalid(_TurnCheck):
    """Penalises every invalid attempt: unparsable or illegal (the turn's valid flag)."""

    name = "invalid"

    def passes(self, turn: Turn) -> bool:
        return turn.valid


@hookimpl
def register_rewards(register):
    register("format", Format)
    register("invalid", Invalid)
