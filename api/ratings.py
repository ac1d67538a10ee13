"""Ratings and results for every seat holder: Elo online per match, Bradley-Terry in batch
for reports, and the league's payoff table (`Payoffs`).

Elo (the expected score ``1 / (1 + 10 ** ((r_b - r_a) / 400))`` and an update by ``K`` times
the surprise) moves after every match, which is what a curriculum that keeps the learner's
expected win rate inside a band needs. Elo depends on the order of matches; the Bradley-Terry
fit does not: it finds the strengths that make all recorded results most likely, with Hunter's
MM algorithm (Hunter 2004, "MM algorithms for generalized Bradley-Terry models"). A weak prior
(``prior_games`` virtual games, half won and half lost, against a reference player) keeps the
strength of an unbeaten or winless player finite. Both are reported on the Elo scale; draws
count half a win.

The band rule: keep a win rate between ``low`` and ``high`` by scaling a difficulty.

Ratings are kept by the run's league for every seat holder and read by opponent samplers (the
Elo curriculum); the band rule is shared by the Elo curriculum (opponents) and the task
schedule of proposer games (games); so both live on the contracts floor that all may import.
So does `EloPair`, the two ratings of a task setter and its solver that the task schedule
keeps: seed 004's difficulty table states the band as ratings (a proposer at 1200 against a
solver at 1500 means the solver wins more than 70%).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from selfplay.api.types import Episode

ELO_SCALE = 400.0
SCORES = {1.0: "wins", 0.5: "draws", 0.0: "losses"}


def expected_score(rating: float, opponent: float, scale: float = ELO_SCALE) -> float:
    """The score (win 1, draw 1/2) a player rated ``rating`` expects against ``opponent``."""
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / scale))


def score_of(payoff: float) -> float:
    """A zero-sum payoff as a match score: won 1, drawn 0.5, lost 0."""
    return 1.0 if payoff > 0 else 0.0 if payoff < 0 else 0.5


@dataclass(frozen=True)
class RatingRow:
    """One line of the ratings table."""

    name: str
    elo: float
    bt: float
    games: int
    wins: int
    draws: int
    losses: int


class Ratings:
    """Elo ratings kept online, results tallied per pair for a Bradley-Terry fit."""

    def __init__(self, k: float = 16.0, initial: float = 1000.0, prior_games: float = 1.0) -> None:
        if not k > 0 or not prior_games > 0:
            raise ValueError(f"k and prior_games must be positive, got k={k}, {prior_games=}.")
        self.k, self.initial, self.prior_games = k, initial, prior_games
        self.elo: dict[str, float] = {}
        # (a, b) with a < b -> [a's wins, draws, b's wins]
        self.results: dict[tuple[str, str], list[int]] = {}

    def add(self, name: str, rating: float | None = None) -> None:
        """Rate ``name`` from now on (at ``rating``, by default the initial rating)."""
        if name not in self.elo:
            self.elo[name] = self.initial if rating is None else rating

    def rating(self, name: str) -> float:
        return self.elo.get(name, self.initial)

    def expected(self, name: str, opponent: str) -> float:
        """The score ``name`` expects against ``opponent`` from their current Elo ratings."""
        return expected_score(self.rating(name), self.rating(opponent))

    def record(self, name: str, opponent: str, score: float) -> None:
        """One finished match: ``score`` is ``name``'s result, 1 (won), 0.5 (drawn) or 0 (lost)."""
        if score not in SCORES:
            raise ValueError(
                f"A match score is 1 (won), 0.5 (drawn) or 0 (lost), got {score!r}; "
                "turn payoffs into scores with score_of(payoff)."
            )
        if name == opponent:
            raise ValueError(f"{name!r} cannot be rated against itself.")
        self.add(name)
        self.add(opponent)
        surprise = self.k * (score - self.expected(name, opponent))
        self.elo[name] += surprise
        self.elo[opponent] -= surprise
        pair = tuple(sorted((name, opponent)))
        first_score = score if name == pair[0] else 1.0 - score
        self.results.setdefault(pair, [0, 0, 0])[{1.0: 0, 0.5: 1, 0.0: 2}[first_score]] += 1

    def bradley_terry(self, iterations: int = 10000, tolerance: float = 1e-10) -> dict[str, float]:
        """Strengths fitted to all results, on the Elo scale with the same mean as the Elo ratings.

        MM update: ``g_i <- W_i / sum_j n_ij / (g_i + g_j)``, where ``W_i`` counts wins (draws
        half), ``n_ij`` games between i and j, and the sum includes the prior's reference
        player (strength 1, ``prior_games`` games).
        """
        names = list(self.elo)
        if not names:
            return {}
        index = {name: i for i, name in enumerate(names)}
        wins = np.full(len(names), self.prior_games / 2)
        games = np.zeros((len(names), len(names)))
        for (a, b), (a_wins, draws, b_wins) in self.results.items():
            i, j = index[a], index[b]
            wins[i] += a_wins + draws / 2
            wins[j] += b_wins + draws / 2
            games[i, j] = games[j, i] = a_wins + draws + b_wins
        strength = np.ones(len(names))
        for _ in range(iterations):
            pairs = games / (strength[:, None] + strength[None, :])
            updated = wins / (self.prior_games / (strength + 1.0) + pairs.sum(axis=1))
            change = np.abs(np.log(updated / strength)).max()
            strength = updated
            if change < tolerance:
                break
        elo = ELO_SCALE * np.log10(strength)
        elo += np.mean(list(self.elo.values())) - elo.mean()
        return {name: float(elo[index[name]]) for name in names}

    def table(self) -> list[RatingRow]:
        """Every rated player, best Elo first."""
        counts = {name: [0, 0, 0] for name in self.elo}  # wins, draws, losses
        for (a, b), (a_wins, draws, b_wins) in self.results.items():
            for name, won, lost in ((a, a_wins, b_wins), (b, b_wins, a_wins)):
                counts[name][0] += won
                counts[name][1] += draws
                counts[name][2] += lost
        bt = self.bradley_terry()
        rows = [
            RatingRow(name, self.elo[name], bt[name], sum(counts[name]), *counts[name])
            for name in self.elo
        ]
        return sorted(rows, key=lambda row: (-row.elo, row.name))

    def write_csv(self, path: str | Path) -> None:
        with Path(path).open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow([f.name for f in fields(RatingRow)])
            writer.writerows(astuple(row) for row in self.table())

    def state_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "initial": self.initial,
            "prior_games": self.prior_games,
            "elo": dict(self.elo),
            "results": [[a, b, *tally] for (a, b), tally in self.results.items()],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.k, self.initial = state["k"], state["initial"]
        self.prior_games = state["prior_games"]
        self.elo = dict(state["elo"])
        self.results = {(a, b): list(tally) for a, b, *tally in state["results"]}


# ---- the band rule -----------------------------------------------------------------------


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


# ---- the league's payoff table ----------------------------------------------------------------
#
# For every ordered pair of holders (a, b) that met in a two-seat match, the table keeps a's
# summed payoff, a's summed score (won 1, drawn 0.5, lost 0: `score_of`) and the number of
# matches; (b, a) holds b's side of the same matches. The run's league records every match it
# sees (training matches, the matches a sampler asks for, keep-best's) and writes the table as
# crossplay.csv; a sampler reads it as ``payoff_table`` under the names it knows the holders by
# (PSRO's empirical payoff matrix), and keep-best reads the scores. One table, so the matrix
# PSRO solves and the table a user reads are the same matches.


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
