"""benchmarks/kuhn_magnet.py: the point `legal-pg`'s all-answers update settles at under a
uniform reverse-KL magnet, behind "the last iterate settles at 0.07" (benchmarks/RESULTS.md)."""

from __future__ import annotations

import pytest
from project_scripts import load_script

from selfplay.games.kuhn_poker.tree import nash_conv, nash_probabilities, strategy_table

magnet = load_script("benchmarks/kuhn_magnet.py")


def exploitability(table) -> float:
    return float(nash_conv(magnet.table_strategy(table))) / 2


def test_at_an_equilibrium_every_answer_played_is_worth_the_same():
    nash = strategy_table(nash_probabilities)
    table = {key: {a: float(p) for a, p in moves.items()} for key, moves in nash.items()}
    for key, values in magnet.answer_values(table).items():
        played = [values[a] for a, p in table[key].items() if p > 0]
        assert max(played) - min(played) == pytest.approx(0.0, abs=1e-12), key


def test_the_update_comes_to_rest_and_a_weaker_magnet_rests_nearer_the_equilibrium():
    rests = {}
    for coef in (0.4, 0.2, 0.1):
        table, moved = magnet.settle(coef, steps=6000, eta=0.5)
        assert moved < 1e-9  # at rest: no answer moves
        values = magnet.answer_values(table)
        for key, q in table.items():  # the magnet's pull balances the values' push
            mean = sum(q[a] * values[key][a] for a in q)
            for a in q:
                push = q[a] * (values[key][a] - mean)
                assert push == pytest.approx(coef * (q[a] - 1 / len(q)), abs=1e-9)
        rests[coef] = exploitability(table)
    assert 0.0 < rests[0.1] < rests[0.2] < rests[0.4] < 0.458  # uniform play scores 0.458
