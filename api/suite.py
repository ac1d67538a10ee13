"""The evaluation-suite contract: a named, fixed measurement of any policy on chosen games.

``selfplay eval --suite NAME`` runs one on a run folder, a checkpoint folder or any model name
``--model`` accepts (an untrained model gives the baseline). A suite plays its own games
whatever game the policy trained on; a policy that cannot play them simply scores low.

A suite never builds models or plays matches itself: the host lends it a `Bench` that does,
so a suite plug-in needs only the contracts. ``run`` returns every figure as one value per
seed; the host reports each figure's mean, min-max spread and standard deviation.
Suites register through the ``register_suites`` hook like every other plug-in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from selfplay.api.game import Game
from selfplay.api.policy import Policy
from selfplay.api.types import Episode, Role

#: A figure's values, one per seed, in the order of the seeds given.
Figures = dict[str, list[float]]


class Bench(Protocol):
    """What the host lends a suite: the policy, the games, and greedy matches."""

    policy: Policy

    def game(self, name: str) -> Game:
        """The registered game ``name`` with its default options."""

    def matches(
        self, game: Game, opponent: str, matches: int, seed: int
    ) -> list[tuple[Role, Episode]]:
        """``matches`` greedy matches of the policy against the scripted player ``opponent``,
        the policy in each seat in turn (every seat sees each deal); each with its role."""

    def table(self, game: Game) -> dict[str, dict[str, float]] | None:
        """The policy's probability of each legal action at each information set of a game
        that lists them (`TabularGame`); None when the policy cannot be read as a table."""


class Suite:
    """A named measurement: subclass, set ``name``, ``description`` and ``games``, and
    implement `run`."""

    name: ClassVar[str]
    description: ClassVar[str]  # one line: what it measures
    games: ClassVar[tuple[str, ...]]  # the games it plays

    def run(self, bench: Bench, seeds: Sequence[int], matches: int) -> Figures:
        """``{figure: [value for each seed]}``; ``matches`` per opponent and seed."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "games": list(self.games)}
