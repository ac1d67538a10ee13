"""The two simplest opponents: the learner itself (mirror self-play) and a fixed one: a
scripted player of the game, or a served model (``fixed:openai:http://HOST:PORT/v1#MODEL``)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import Field

from selfplay.api.errors import ConfigError
from selfplay.api.options import Options
from selfplay.api.sampler import GREEDY_LEARNER, LEARNER, OpponentSampler, is_served, scripted
from selfplay.plugins.hookspecs import hookimpl


class LatestOptions(Options):
    greedy: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description=(
            "Share of opponent seats the learner holds playing its argmax move (not trained "
            "on): its sharpest attacker, so a missed block is punished."
        ),
    )


class Latest(OpponentSampler):
    """Mirror self-play: the learner holds every seat and trains on all of them.

    With ``greedy`` > 0 that share of opponent seats is the learner playing greedily: the
    strongest player the learner knows, as in the evaluation, and the one a missed defence
    loses to. Those seats are not trained on (their moves were not sampled).
    """

    Options = LatestOptions
    name = "latest"

    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        if self.options.greedy and rng.random() < self.options.greedy:
            return GREEDY_LEARNER
        return LEARNER


class FixedOptions(Options):
    player: str | None = Field(
        default=None,
        description="The game's scripted player to face, or a served model (openai:URL#MODEL).",
    )


class Fixed(OpponentSampler):
    """Always the same opponent: a scripted player of the game (``fixed:random``,
    ``fixed:minimax``) or a served model (``fixed:openai:http://localhost:8000/v1#NAME``)."""

    Options = FixedOptions
    name = "fixed"
    positional = "player"

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        if not self.options.player:
            raise ConfigError(
                "The 'fixed' opponent needs a scripted player, e.g. --opponent fixed:random "
                "(`selfplay games` lists each game's players)."
            )
        self.player = self.options.player

    def check(self, game: object) -> None:
        if is_served(self.player):
            return
        players = getattr(game, "players", {})
        if self.player not in players:
            known = ", ".join(sorted(players)) or "none"
            raise ConfigError(
                f"--opponent fixed:{self.player}: {game.name} has no scripted player "
                f"{self.player!r}; its players are: {known}."
            )

    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        return self.player if is_served(self.player) else scripted(self.player)


@hookimpl
def register_opponent_samplers(register):
    register("latest", Latest)
    register("fixed", Fixed)
