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

Elo and Bradley-Terry are in ``elo``, the band rule and `EloPair` in ``band``, the payoff table
in ``payoffs``; all are importable from here.
"""

from selfplay.api.ratings.band import BandController, EloPair, check_band
from selfplay.api.ratings.elo import (
    ELO_SCALE,
    SCORES,
    RatingRow,
    Ratings,
    expected_score,
    score_of,
)
from selfplay.api.ratings.payoffs import Payoffs

__all__ = [
    "ELO_SCALE",
    "SCORES",
    "BandController",
    "EloPair",
    "Payoffs",
    "RatingRow",
    "Ratings",
    "check_band",
    "expected_score",
    "score_of",
]
