"""Meta-solvers on matrix games whose equilibria are known."""

from __future__ import annotations

import numpy as np
import pytest

from selfplay.opponents.meta_solvers import (
    META_SOLVERS,
    exploitability,
    nash,
    nash_conv,
    prd,
    rm,
    solve,
    uniform,
)

RPS = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], dtype=float)
MATCHING_PENNIES = np.array([[1, -1], [-1, 1]], dtype=float)
# Rock-paper-scissors where rock beating scissors pays 2. Its unique equilibrium is
# (1/4, 1/2, 1/4), so a solver that merely stays at its uniform start fails here.
WEIGHTED_RPS = np.array([[0, -1, 2], [1, 0, -1], [-2, 1, 0]], dtype=float)
# Member 0 beats everyone: a pure equilibrium.
PURE = np.array([[0, 1, 2], [-1, 0, 1], [-2, -1, 0]], dtype=float)
# Rock-paper-scissors plus a fourth member that loses to all three.
DOMINATED = np.array([[0, -1, 1, 2], [1, 0, -1, 2], [-1, 1, 0, 2], [-2, -2, -2, 0]], dtype=float)
APPROXIMATE = {"prd": 0.02, "rm": 0.02}


@pytest.mark.parametrize("name", ["nash", "prd", "rm"])
def test_rock_paper_scissors_is_uniform(name):
    assert META_SOLVERS[name](RPS) == pytest.approx([1 / 3] * 3, abs=1e-6)


@pytest.mark.parametrize("name", ["nash", "prd", "rm"])
def test_weighted_rock_paper_scissors(name):
    mixture = META_SOLVERS[name](WEIGHTED_RPS)
    assert mixture == pytest.approx([0.25, 0.5, 0.25], abs=APPROXIMATE.get(name, 1e-6))
    assert exploitability(WEIGHTED_RPS, mixture) < APPROXIMATE.get(name, 1e-6)


@pytest.mark.parametrize("name", ["nash", "prd", "rm"])
def test_matching_pennies(name):
    assert META_SOLVERS[name](MATCHING_PENNIES) == pytest.approx([0.5, 0.5], abs=1e-6)


@pytest.mark.parametrize("name", ["nash", "prd", "rm"])
def test_pure_equilibrium(name):
    mixture = META_SOLVERS[name](PURE)
    assert mixture[0] == pytest.approx(1.0, abs=APPROXIMATE.get(name, 1e-9))


def test_dominated_member_gets_nothing_under_nash():
    mixture = nash(DOMINATED)
    assert mixture[3] == 0.0
    assert mixture[:3] == pytest.approx([1 / 3] * 3, abs=1e-9)


def test_nash_breaks_ties_toward_the_even_mixture():
    assert nash(np.zeros((4, 4))) == pytest.approx([0.25] * 4)
    assert np.array_equal(nash(PURE), nash(PURE.copy()))


def test_prd_floor_keeps_every_member_in_play():
    mixture = prd(DOMINATED, gamma=0.1)
    assert mixture[3] >= 0.1 / 4 - 1e-12
    assert prd(DOMINATED, gamma=0.0)[3] < 0.01


def test_uniform_is_uniform_whatever_the_payoffs():
    assert uniform(PURE) == pytest.approx([1 / 3] * 3)


@pytest.mark.parametrize("name", sorted(META_SOLVERS))
def test_every_solver_returns_a_distribution(name):
    payoffs = np.random.default_rng(0).normal(size=(6, 6))
    mixture = solve(name, payoffs - payoffs.T)
    assert mixture.shape == (6,)
    assert np.all(mixture >= 0)
    assert mixture.sum() == pytest.approx(1.0, abs=1e-12)


def test_nash_of_a_random_game_is_unexploitable():
    payoffs = np.random.default_rng(1).normal(size=(12, 12))
    assert exploitability(payoffs - payoffs.T, nash(payoffs - payoffs.T)) < 1e-8

    # Not symmetric: the row's guarantee equals what the column's own maximin concedes.
    row, col = nash(payoffs), nash(-payoffs.T)
    assert (row @ payoffs).min() == pytest.approx((payoffs @ col).max(), abs=1e-8)
    assert nash_conv(payoffs, row, col) < 1e-8


def test_nash_conv_of_a_pure_strategy_in_rock_paper_scissors():
    rock = [1.0, 0.0, 0.0]
    # Paper beats rock by 1 in either seat.
    assert nash_conv(RPS, rock) == pytest.approx(2.0)
    assert exploitability(RPS, rock) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (np.zeros((2, 3)), "square"),
        (np.zeros((0, 0)), "non-empty"),
        ([[0.0, float("nan")], [0.0, 0.0]], r"M\[0\]\[1\] = nan"),
        ([[0.0, float("inf")], [0.0, 0.0]], "non-finite"),
    ],
)
@pytest.mark.parametrize("name", sorted(META_SOLVERS))
def test_bad_matrices_are_named(name, matrix, message):
    with pytest.raises(ValueError, match=message):
        META_SOLVERS[name](matrix)


def test_unknown_solver_and_bad_options_are_named():
    with pytest.raises(ValueError, match=r"Unknown meta-solver 'nashh'.*nash, prd, rm, uniform"):
        solve("nashh", RPS)
    with pytest.raises(ValueError, match="iterations must be positive"):
        rm(RPS, iterations=0)
    with pytest.raises(ValueError, match="gamma must lie in"):
        prd(RPS, gamma=1.0)
    with pytest.raises(ValueError, match="3 non-negative probabilities"):
        exploitability(RPS, [0.5, 0.5])
