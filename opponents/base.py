"""Opponent samplers choose who holds the non-learner seats of each match.

A sampler answers with seat-holder names, never with models: ``"learner"`` is the policy being
trained, ``"scripted:<player>"`` a game's scripted player, and later issues add snapshot names.
The loop turns names into policies, so samplers stay free of the training machinery.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

LEARNER = "learner"


def scripted(player: str) -> str:
    return f"scripted:{player}"


class OpponentSampler(ABC):
    """Picks a seat holder for an opponent seat; may learn from finished matches."""

    @abstractmethod
    def sample(self, pool: Sequence[str], rng: random.Random) -> str:
        """The holder of one opponent seat, from the pool of available holder names."""

    def update(self, results: Sequence[Any]) -> None:
        """Learn from finished episodes (ratings, payoff matrices); stateless by default."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        del state
