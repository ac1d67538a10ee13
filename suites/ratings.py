"""Bradley-Terry ratings from a tournament's results, on an Elo-like scale.

The Bradley-Terry model gives each player a strength ``p_i > 0`` and says ``i`` beats ``j``
with probability ``p_i / (p_i + p_j)``. Its maximum-likelihood strengths are found by the
minorization-maximization iteration of Hunter ("MM algorithms for generalized Bradley-Terry
models", Annals of Statistics, 2004):

    p_i <- W_i / sum_{j != i} n_ij / (p_i + p_j)

where ``W_i`` is i's score (a win counts 1, a draw 1/2) and ``n_ij`` the matches between i
and j. A player who never scores has no finite maximum, so every pair that met gets
``prior`` virtual matches split evenly (a draw's worth of shrinkage towards equal strength).

Ratings are ``anchor + 400 log10(p_i / p_anchored)``: on Elo's scale a 400-point gap is 10:1
odds, and the anchored player (e.g. the random player) sits at ``anchor`` whatever the pool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

Pair = tuple[str, str]
ELO_SCALE = 400.0
ITERATIONS = 10_000
TOLERANCE = 1e-10


def bradley_terry(
    score: Mapping[Pair, float], played: Mapping[Pair, float], prior: float = 1.0
) -> dict[str, float]:
    """Strengths (geometric mean 1) from ``score[(i, j)]``, i's score in its ``played[(i, j)]``
    matches against j; each unordered pair is given once, in either order."""
    players = sorted({name for pair in played for name in pair})
    wins = dict.fromkeys(players, 0.0)
    meetings: dict[Pair, float] = {}
    for (i, j), n in played.items():
        if n <= 0:
            continue
        mine = score.get((i, j), 0.0)
        wins[i] += mine + prior / 2
        wins[j] += n - mine + prior / 2
        meetings[(i, j)] = meetings.get((i, j), 0.0) + n + prior
    strength = dict.fromkeys(players, 1.0)
    for _ in range(ITERATIONS):
        denominators = dict.fromkeys(players, 0.0)
        for (i, j), n in meetings.items():
            share = n / (strength[i] + strength[j])
            denominators[i] += share
            denominators[j] += share
        updated = {p: wins[p] / denominators[p] if denominators[p] else 1.0 for p in players}
        scale = math.exp(sum(math.log(v) for v in updated.values()) / len(updated))
        updated = {p: v / scale for p, v in updated.items()}
        change = max(abs(updated[p] - strength[p]) for p in players)
        strength = updated
        if change < TOLERANCE:
            break
    return strength


def elo_scale(strength: Mapping[str, float], anchored: str, anchor: float) -> dict[str, float]:
    """Strengths as Elo-like ratings, ``anchored`` at ``anchor``."""
    base = strength[anchored]
    return {p: anchor + ELO_SCALE * math.log10(s / base) for p, s in strength.items()}
