"""Elo ratings kept online per match, and a Bradley-Terry fit of every recorded result.

Elo moves after every match in the order they come; the Bradley-Terry fit (Hunter's MM
algorithm, with ``prior_games`` virtual games against a reference player) does not depend on
that order. Both are reported on the Elo scale; draws count half a win.
"""

from __future__ import annotations

import csv
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

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
