"""Meta-solvers: which mixture over the pool the learner should face next (PSRO's middle phase).

The input is the empirical payoff matrix of the pool as the learner sees it: ``M[i][j]`` is the
expected payoff of member ``i`` against member ``j``. The meta-game is two-player zero-sum:
the row player receives ``M``, the column player ``-M``; every solver returns the row player's
mixture, a probability vector over the pool. In a symmetric game (``M = -M.T``, as a pool of one
policy's snapshots gives) the row and column mixtures coincide.

Following OpenSpiel's psro_v2/meta_strategies.py the solvers live in a plain name -> function
table, ``META_SOLVERS``: ``uniform`` (fictitious play), ``nash`` (linear programming), ``prd``
(projected replicator dynamics, Lanctot et al. 2017, "A Unified Game-Theoretic Approach to
Multiagent Reinforcement Learning") and ``rm`` (regret matching, Hart and Mas-Colell 2000).
All are deterministic: the same matrix gives the same mixture.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import linprog

MetaSolver = Callable[..., np.ndarray]


def as_payoff_matrix(matrix: Any) -> np.ndarray:
    """``matrix`` as a float array, or a ValueError saying what is wrong with it."""
    array = np.asarray(matrix, dtype=float)
    if array.ndim != 2 or array.shape[0] != array.shape[1] or array.shape[0] == 0:
        raise ValueError(
            f"A meta-solver needs a non-empty square payoff matrix (pool x pool), got shape "
            f"{array.shape}; M[i][j] is the payoff of member i against member j."
        )
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        i, j = (int(k) for k in bad[0])
        raise ValueError(
            f"The payoff matrix has a non-finite entry M[{i}][{j}] = {array[i, j]} "
            f"({len(bad)} in all); fill unplayed pairs (e.g. with 0) before solving."
        )
    return array


def uniform(matrix: Any) -> np.ndarray:
    """Fictitious play: every member of the pool equally often."""
    size = as_payoff_matrix(matrix).shape[0]
    return np.full(size, 1.0 / size)


def nash(matrix: Any, tolerance: float = 1e-10) -> np.ndarray:
    """A maximin (Nash) mixture of the zero-sum game ``M``, found by linear programming.

    First the game value ``v`` is found (maximise v subject to ``x @ M >= v`` column by column).
    Equilibria are often many (identical snapshots, an all-zero matrix); among the mixtures that
    still guarantee ``v`` (to ``tolerance`` times the largest payoff), a second program picks one
    whose largest probability is smallest, so a game where every member is alike gives the
    uniform mixture rather than an arbitrary pure one. Weights below 1e-9 are set to 0.
    """
    payoff = as_payoff_matrix(matrix)
    size = payoff.shape[0]
    value = float((_maximin(payoff) @ payoff).min())
    slack = tolerance * max(1.0, float(np.abs(payoff).max()))
    # Variables: x (size), t. Minimise t with x_i <= t, x @ M >= value - slack, sum(x) = 1.
    cost = np.r_[np.zeros(size), 1.0]
    below_t = np.c_[np.eye(size), -np.ones(size)]
    guarantee = np.c_[-payoff.T, np.zeros(size)]
    result = linprog(
        cost,
        A_ub=np.r_[below_t, guarantee],
        b_ub=np.r_[np.zeros(size), np.full(size, slack - value)],
        A_eq=np.r_[np.ones(size), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0, None)] * (size + 1),
        method="highs",
    )
    return _as_mixture(_solved(result).x[:size])


def _maximin(payoff: np.ndarray) -> np.ndarray:
    """A mixture x maximising min over columns j of (x @ M)_j."""
    size = payoff.shape[0]
    # Variables: x (size), v. Minimise -v with v - (x @ M)_j <= 0, sum(x) = 1.
    result = linprog(
        np.r_[np.zeros(size), -1.0],
        A_ub=np.c_[-payoff.T, np.ones(size)],
        b_ub=np.zeros(size),
        A_eq=np.r_[np.ones(size), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0, None)] * size + [(None, None)],
        method="highs",
    )
    return _as_mixture(_solved(result).x[:size])


def _solved(result: Any) -> Any:
    if result.status != 0:
        raise RuntimeError(f"The Nash linear program failed: {result.message}")
    return result


def prd(matrix: Any, iterations: int = 5000, step: float = 0.01, gamma: float = 1e-3) -> np.ndarray:
    """Projected replicator dynamics, the average of the row population over all iterations.

    Both populations start uniform and follow the replicator equation
    ``dx_i = x_i ((M y)_i - x @ M @ y)`` (the column population with ``-M``); after each Euler
    ``step`` every population is projected back onto the simplex with each probability at least
    ``gamma / size``, the exploration floor that keeps every member in play.
    """
    payoff = as_payoff_matrix(matrix)
    _check_options(iterations=iterations, step=step, gamma=gamma)
    size = payoff.shape[0]
    floor = gamma / size
    row = col = np.full(size, 1.0 / size)
    total = np.zeros(size)
    for _ in range(iterations):
        row_fitness, col_fitness = payoff @ col, -(row @ payoff)
        row, col = (
            _project(row + step * row * (row_fitness - row @ row_fitness), floor),
            _project(col + step * col * (col_fitness - col @ col_fitness), floor),
        )
        total += row
    return _as_mixture(total)


def rm(matrix: Any, iterations: int = 10000) -> np.ndarray:
    """Regret matching for both players; the row player's average strategy.

    Each player plays in proportion to its positive cumulative regrets (uniformly when none is
    positive). In a zero-sum game the average strategies converge to a Nash equilibrium.
    """
    payoff = as_payoff_matrix(matrix)
    _check_options(iterations=iterations)
    size = payoff.shape[0]
    row_regret, col_regret, total = np.zeros(size), np.zeros(size), np.zeros(size)
    for _ in range(iterations):
        row, col = _regret_matching(row_regret), _regret_matching(col_regret)
        row_values, col_values = payoff @ col, -(row @ payoff)
        row_regret += row_values - row @ row_values
        col_regret += col_values - col @ col_values
        total += row
    return _as_mixture(total)


def _regret_matching(regret: np.ndarray) -> np.ndarray:
    positive = np.maximum(regret, 0.0)
    norm = positive.sum()
    return positive / norm if norm > 0 else np.full(len(regret), 1.0 / len(regret))


def _project(vector: np.ndarray, floor: float) -> np.ndarray:
    """Euclidean projection onto {x : sum(x) = 1, x_i >= floor}."""
    mass = 1.0 - floor * len(vector)
    shifted = vector - floor
    ordered = np.sort(shifted)[::-1]
    cumulative = np.cumsum(ordered) - mass
    ranks = np.arange(1, len(vector) + 1)
    last = np.nonzero(ordered - cumulative / ranks > 0)[0][-1]
    threshold = cumulative[last] / (last + 1)
    return np.maximum(shifted - threshold, 0.0) + floor


def _as_mixture(weights: np.ndarray) -> np.ndarray:
    """Clip round-off below zero and renormalise to sum exactly 1."""
    clipped = np.where(weights > 1e-9, weights, 0.0)
    return clipped / clipped.sum()


def _check_options(**options: float) -> None:
    for name, value in options.items():
        if name == "gamma":
            if not 0 <= value < 1:
                raise ValueError(f"gamma must lie in [0, 1), got {value}.")
        elif not value > 0:
            raise ValueError(f"{name} must be positive, got {value}.")


META_SOLVERS: dict[str, MetaSolver] = {"uniform": uniform, "nash": nash, "prd": prd, "rm": rm}


def solve(name: str, matrix: Any, **options: Any) -> np.ndarray:
    """The mixture that meta-solver ``name`` gives for ``matrix`` (options go to the solver)."""
    if name not in META_SOLVERS:
        known = ", ".join(sorted(META_SOLVERS))
        raise ValueError(f"Unknown meta-solver {name!r}; choose one of: {known}.")
    return META_SOLVERS[name](matrix, **options)


def nash_conv(matrix: Any, row: Any, col: Any | None = None) -> float:
    """How much both players gain by best-responding: 0 exactly at a Nash equilibrium.

    ``row`` and ``col`` are the two players' mixtures; ``col`` defaults to ``row``, the
    symmetric reading of a pool (the learner faces its own mixture in either seat).
    """
    payoff = as_payoff_matrix(matrix)
    row = _as_probabilities(row, payoff.shape[0], "row")
    col = row if col is None else _as_probabilities(col, payoff.shape[0], "col")
    value = row @ payoff @ col
    return float((payoff @ col).max() - value + (value - (row @ payoff).min()))


def exploitability(matrix: Any, row: Any, col: Any | None = None) -> float:
    """NashConv divided by the number of players (two), as OpenSpiel defines it."""
    return nash_conv(matrix, row, col) / 2


def _as_probabilities(mixture: Any, size: int, name: str) -> np.ndarray:
    vector = np.asarray(mixture, dtype=float)
    if vector.shape != (size,) or np.any(vector < 0) or abs(vector.sum() - 1) > 1e-6:
        raise ValueError(
            f"{name} must be {size} non-negative probabilities summing to 1, got {mixture!r}."
        )
    return vector
