"""The band rule: keep a win rate between ``low`` and ``high`` by scaling a difficulty.

Shared by the Elo curriculum (opponents) and the task schedule of proposer games (games), so
it lives on the contracts floor that both may import.
"""

from __future__ import annotations

from dataclasses import dataclass


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
