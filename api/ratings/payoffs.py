"""The league's payoff table: every pair of seat holders that met, and how their matches went.

For every ordered pair of holders (a, b) that met in a two-seat match, the table keeps a's
summed payoff, a's summed score (won 1, drawn 0.5, lost 0: `score_of`) and the number of
matches; (b, a) holds b's side of the same matches. The run's league records every match it
sees (training matches, the matches a sampler asks for, keep-best's) and writes the table as
crossplay.csv; a sampler reads it as ``payoff_table`` under the names it knows the holders by
(PSRO's empirical payoff matrix), and keep-best reads the scores. One table, so the matrix
PSRO solves and the table a user reads are the same matches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from selfplay.api.ratings.elo import score_of

if TYPE_CHECKING:
    from selfplay.api.types import Episode


class Payoffs:
    """``(a, b) -> [a's payoff sum, a's score sum, matches]``, in the order pairs first met."""

    def __init__(self) -> None:
        self.pairs: dict[tuple[str, str], list[float]] = {}

    def record(self, episodes: Iterable[Episode]) -> list[Episode]:
        """Tally every two-seat match with an outcome between two different holders; returns
        the matches recorded."""
        kept = []
        for episode in episodes:
            if len(episode.seats) != 2 or episode.outcome is None:
                continue
            (role_a, a), (role_b, b) = sorted(episode.seats.items())
            if a == b:
                continue
            pa, pb = episode.outcome[role_a], episode.outcome[role_b]
            self._tally(a, b, pa, score_of(pa - pb))
            self._tally(b, a, pb, score_of(pb - pa))
            kept.append(episode)
        return kept

    def _tally(self, a: str, b: str, payoff: float, score: float) -> None:
        total = self.pairs.setdefault((a, b), [0.0, 0.0, 0.0])
        total[0] += payoff
        total[1] += score
        total[2] += 1

    def met(self, a: str, b: str) -> bool:
        return (a, b) in self.pairs

    def payoff(self, a: str, b: str) -> float:
        """a's mean payoff against b (0 when they never met)."""
        total, _, n = self.pairs.get((a, b), (0.0, 0.0, 0.0))
        return total / n if n else 0.0

    def score(self, a: str, b: str) -> float | None:
        """a's mean score against b (None when they never met)."""
        _, total, n = self.pairs.get((a, b), (0.0, 0.0, 0.0))
        return total / n if n else None

    def matrix(self, members: Sequence[str]) -> list[list[float]]:
        """Mean payoff of row member against column member (0 where no match was played)."""
        return [[self.payoff(a, b) for b in members] for a in members]

    def view(self, name: Callable[[str], str]) -> Payoffs:
        """The table with each holder renamed by ``name`` (entries that fall together add up):
        a sampler's view, which knows a learner's snapshot as ``snapshot:N``."""
        renamed = Payoffs()
        for (a, b), values in self.pairs.items():
            total = renamed.pairs.setdefault((name(a), name(b)), [0.0, 0.0, 0.0])
            for k, value in enumerate(values):
                total[k] += value
        return renamed

    def rows(self) -> list[tuple[str, str, float, int]]:
        """``(holder, opponent, mean payoff, matches)``, sorted: crossplay.csv's rows."""
        return [
            (a, b, self.payoff(a, b), int(n)) for (a, b), (_, _, n) in sorted(self.pairs.items())
        ]

    def state_dict(self) -> dict[str, Any]:
        return {"pairs": [[a, b, *values] for (a, b), values in self.pairs.items()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pairs = {(a, b): [float(p), float(s), float(n)] for a, b, p, s, n in state["pairs"]}
