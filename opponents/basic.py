"""The two simplest opponents: the learner itself (mirror self-play) and a fixed scripted player."""

from __future__ import annotations

import random
from collections.abc import Sequence

from selfplay.api.sampler import LEARNER, OpponentSampler, scripted
from selfplay.plugins.hookspecs import hookimpl


class Latest(OpponentSampler):
    """Mirror self-play: the learner holds every seat and trains on all of them."""

    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        return LEARNER


class Fixed(OpponentSampler):
    """Always the same scripted player of the game, e.g. ``fixed:random`` or ``fixed:minimax``."""

    def __init__(self, player: str | None = None) -> None:
        if not player:
            raise ValueError(
                "The 'fixed' opponent needs a scripted player, e.g. --opponent fixed:random "
                "(`selfplay games` lists each game's players)."
            )
        self.player = player

    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        return scripted(self.player)


@hookimpl
def register_opponent_samplers(register):
    register("latest", Latest)
    register("fixed", Fixed)
