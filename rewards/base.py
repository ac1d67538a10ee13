"""Rewards turn finished episodes into scores per role.

A reward returns, for each episode, ``{role: score}``; a score of ``None`` means the reward does
not apply to that role in that match (never a silent 0).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from selfplay.core.types import Episode, Role

RoleScores = dict[Role, float | None]


class Reward(ABC):
    name: str = "reward"

    @abstractmethod
    def __call__(self, episodes: Sequence[Episode]) -> list[RoleScores]:
        """One role→score mapping per episode."""
