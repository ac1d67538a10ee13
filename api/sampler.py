"""Opponent samplers choose who holds the non-learner seats of each match.

A sampler answers with seat-holder names, never with models: ``"learner"`` is the policy being
trained, ``"scripted:<player>"`` a game's scripted player, ``"snapshot:<iteration>"`` a
frozen copy of the learner kept in the pool and ``"openai:<url>#<model>"`` a model played by an
OpenAI-compatible server. The loop turns names into policies, takes the
snapshots and plays the matches a sampler asks for, so samplers stay free of the training
machinery and their whole state is a few lists and numbers that a checkpoint carries.

What the loop calls, in order, each iteration:

    sample(members, rng)          the holder of one opponent seat, once per seat
    update(episodes)              learn from the finished training matches
    every pool.snapshot_every iterations, when ``uses_pool``:
        the loop adds a snapshot to the pool (and evicts one when full), then
        wanted_matches(members)   pairs of members whose matches the sampler wants played;
        update(those episodes)    the loop plays them and hands back the episodes
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from selfplay.api.options import Options

LEARNER = "learner"
# the learner playing its argmax moves: an opponent seat it does not train on
GREEDY_LEARNER = "learner:greedy"
# the learner's argmax moves checked one move ahead against the rules (api/policy.py)
LOOKAHEAD_LEARNER = "learner:lookahead"
SNAPSHOT = "snapshot"
SERVED = "openai"


def scripted(player: str) -> str:
    return f"scripted:{player}"


def snapshot(iteration: int) -> str:
    """The pool name of the learner as it was after ``iteration`` (0: the starting policy)."""
    return f"{SNAPSHOT}:{iteration}"


def is_snapshot(name: str) -> bool:
    return name.startswith(f"{SNAPSHOT}:")


def is_served(name: str) -> bool:
    """Whether ``name`` is a served model, ``openai:http://HOST:PORT/v1#MODEL``."""
    return name.startswith(f"{SERVED}:")


class OpponentSampler(ABC):
    """Picks a seat holder for an opponent seat; may learn from finished matches.

    Options arrive as keyword arguments (``opponent_options``) and are validated by the
    sampler's ``Options`` class; ``positional`` names the option that ``--opponent NAME:ARG``
    sets (``pool:0.5`` is ``p_latest=0.5``).
    """

    name: ClassVar[str] = "sampler"
    Options: ClassVar[type[Options]] = Options
    positional: ClassVar[str | None] = None
    #: True when the sampler draws from the pool of snapshots: the loop then takes them.
    uses_pool: bool = False

    def __init__(self, **options: Any) -> None:
        self.options = type(self).Options(**options)

    def check(self, game: Any) -> None:
        """Refuse, before any work, a setting this game cannot play (a missing player)."""
        del game

    @abstractmethod
    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        """The holder of one opponent seat; ``members`` are the pool's names (oldest first)."""

    def update(self, episodes: Sequence[Any]) -> None:
        """Learn from finished episodes (ratings, payoff matrices); stateless by default."""

    def wanted_matches(self, members: Sequence[str]) -> list[tuple[str, str]]:
        """Pairs of members whose matches the sampler wants played after the pool changed."""
        del members
        return []

    def mixture(self, members: Sequence[str]) -> dict[str, float] | None:
        """The probability of facing each member, when the sampler has one (else None)."""
        del members
        return None

    def metrics(self) -> dict[str, float]:
        """Numbers worth a column in metrics.csv (ratings, meta-strategy weights)."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        del state
