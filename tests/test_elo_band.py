"""The difficulty band read through Elo ratings (seed 004): the band's table, ratings that move
after every decided task and round-trip, a difficulty that settles where a solver of known skill
wins 30-70%, and an unknown band signal refused."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest

from selfplay.api.ratings import BandController, EloPair, expected_score
from selfplay.games.banks import load_bank
from selfplay.games.proposers.task_schedule import TaskSchedule


def test_seed_004s_table_is_the_band_read_through_elo():
    band = BandController()
    # proposer 1200 vs solver 1500: the solver expects > 70%, so the difficulty goes x1.2
    assert band.adjust(1.0, expected_score(1500, 1200)) == pytest.approx(1.2)
    assert band.adjust(1.0, expected_score(1500, 1500)) == 1.0
    assert band.adjust(1.0, expected_score(1500, 1800)) == pytest.approx(0.8)


def test_elo_ratings_move_after_every_decided_task_and_round_trip():
    elo = EloPair(k=16)
    elo.record(True)
    assert elo.solver == pytest.approx(1508) and elo.setter == pytest.approx(1492)
    copy = EloPair()
    copy.load_state_dict(elo.state_dict())
    assert copy.solver_expects() == pytest.approx(elo.solver_expects())
    with pytest.raises(ValueError, match="K-factor"):
        EloPair(k=0)


def scripted_solver_matches(difficulty, skill, n, rng):
    """``n`` decided matches of a solver that wins with probability 1/(1 + (d/skill)^3)."""
    p = 1.0 / (1.0 + (difficulty / skill) ** 3)
    verdicts = ["pass" if rng.random() < p else "fail" for _ in range(n)]
    return [SimpleNamespace(state={"final": "x", "level": 1, "verdict": v}) for v in verdicts]


@pytest.mark.parametrize("signal", ["win_rate", "elo"])
@pytest.mark.parametrize("skill", [0.8, 2.0, 3.5])
def test_the_difficulty_settles_where_a_solver_of_known_skill_wins_30_to_70_percent(signal, skill):
    problems = load_bank("arithmetic", "train")
    schedule = TaskSchedule(problems, inject_every=0, signal=signal, max_difficulty=10.0)
    rng = random.Random(f"{signal}-{skill}")
    settled = []
    for iteration in range(1, 61):
        episodes = scripted_solver_matches(schedule.difficulty, skill, 32, rng)
        schedule.after_iteration(iteration, episodes)
        if iteration > 30:
            settled.append(1.0 / (1.0 + (schedule.difficulty / skill) ** 3))
    assert 0.3 <= sum(settled) / len(settled) <= 0.7, (signal, skill, settled)
    assert schedule.metrics()["task/elo/solver_expects"] == pytest.approx(
        schedule.elo.solver_expects()
    )
    assert math.isclose(schedule.elo.solver + schedule.elo.setter, 3000.0)


def test_an_unknown_band_signal_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="win_rate or elo"):
        TaskSchedule(load_bank("arithmetic", "train"), signal="elo2")
