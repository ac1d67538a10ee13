"""The two simplest opponents: the learner itself (mirror self-play) and a fixed one: a
scripted player of the game, or a served model (``fixed:openai:http://HOST:PORT/v1#MODEL``)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import Field

from selfplay.api.errors import ConfigError
from selfplay.api.options import Options
from selfplay.api.policy import has_player
from selfplay.api.sampler import (
    GREEDY_LEARNER,
    LEARNER,
    LOOKAHEAD_LEARNER,
    OpponentSampler,
    is_served,
    scripted,
)
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
    lookahead: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description=(
            "Share of opponent seats the learner holds playing its argmax move checked one "
            "move ahead against the rules (not trained on): it takes a win at once and "
            "avoids handing one over. Games of perfect information only (tictactoe)."
        ),
    )


class Latest(OpponentSampler):
    """Mirror self-play: the learner holds every seat and trains on all of them.

    With ``greedy`` > 0 that share of opponent seats is the learner playing greedily: the
    strongest player the learner knows, as in the evaluation, and the one a missed defence
    loses to. With ``lookahead`` > 0 that share is the greedy learner checked one move ahead
    against the rules (`LookaheadPolicy`): it never misses a win at once and never hands one
    over. Those seats are not trained on (their moves were not sampled).
    """

    Options = LatestOptions
    name = "latest"

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        if self.options.greedy + self.options.lookahead > 1:
            raise ConfigError(
                f"opponent_options.greedy={self.options.greedy} and lookahead="
                f"{self.options.lookahead} are shares of the opponent seats and add up to more "
                "than 1; lower one of them."
            )

    def check(self, game: object) -> None:
        if self.options.lookahead and not getattr(game, "perfect_information", False):
            raise ConfigError(
                f"opponent_options.lookahead reads the whole game state, and {game.name} hides "
                "information from its players; it plays only games of perfect information "
                "(e.g. tictactoe). Use opponent_options.greedy instead."
            )

    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        greedy, lookahead = self.options.greedy, self.options.lookahead
        if not (greedy or lookahead):
            return LEARNER  # no draw: runs without either replay as before
        draw = rng.random()
        if draw < greedy:
            return GREEDY_LEARNER
        return LOOKAHEAD_LEARNER if draw < greedy + lookahead else LEARNER


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
        if not has_player(game, self.player):
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
