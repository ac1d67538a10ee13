"""The band rule: keep a win rate between ``low`` and ``high`` by scaling a difficulty; and
`EloPair`, the two ratings of a task setter and its solver whose expected score the band reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from selfplay.api.ratings.elo import expected_score


def check_band(low: float, high: float) -> None:
    if not 0 <= low < high <= 1:
        raise ValueError(f"the band needs 0 <= low < high <= 1, got low={low}, high={high}.")


@dataclass
class BandController:
    """Scales a difficulty by ``up`` above the band's top win rate, ``down`` below its bottom."""

    low: float = 0.3
    high: float = 0.7
    up: float = 1.2
    down: float = 0.8

    def __post_init__(self) -> None:
        check_band(self.low, self.high)

    def adjust(self, difficulty: float, win_rate: float) -> float:
        if win_rate > self.high:
            return difficulty * self.up
        if win_rate < self.low:
            return difficulty * self.down
        return difficulty


@dataclass
class EloPair:
    """Two Elo ratings, a setter of tasks and a solver, moved after every decided task.

    Why ratings rather than the last iteration's win rate: a rating carries every match
    played so far, each moving it by ``k`` times the surprise, so a small or unlucky batch
    moves the difficulty less; its expected score is what the band reads instead of the raw
    rate. Both start at ``initial`` (1500, the solver's rating in seed 004's table).
    """

    k: float = 16.0
    initial: float = 1500.0
    setter: float | None = None
    solver: float | None = None

    def __post_init__(self) -> None:
        if not self.k > 0:
            raise ValueError(f"the Elo K-factor must be positive, got k={self.k}.")
        self.setter = self.initial if self.setter is None else self.setter
        self.solver = self.initial if self.solver is None else self.solver

    def solver_expects(self) -> float:
        """The solver's expected score against the setter: what the band reads."""
        assert self.solver is not None and self.setter is not None
        return expected_score(self.solver, self.setter)

    def record(self, solved: bool) -> None:
        """One decided task: the solver scores 1 when it solved it, else 0."""
        assert self.solver is not None and self.setter is not None
        surprise = self.k * (float(solved) - self.solver_expects())
        self.solver += surprise
        self.setter -= surprise

    def state_dict(self) -> dict[str, Any]:
        return {"k": self.k, "setter": self.setter, "solver": self.solver}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.k = float(state["k"])
        self.setter, self.solver = float(state["setter"]), float(state["solver"])
