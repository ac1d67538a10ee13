"""Seed 004 whole: the trained judge seat, Elo ratings for the difficulty band, noise injection."""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from selfplay.api.policy import MockPolicy
from selfplay.api.ratings import BandController, EloPair, expected_score
from selfplay.core.commands.cli import main
from selfplay.core.evaluate import task_metrics
from selfplay.core.rollout import play
from selfplay.games.banks import load_bank
from selfplay.games.banks.noise import BOUNDARY, add_noise, noisy_version
from selfplay.games.math_solver import MathSolver
from selfplay.games.proposers.math_proposer_solver import MathProposerSolver
from selfplay.games.proposers.proposer_solver_judge import ProposerSolverJudge
from selfplay.games.proposers.task_schedule import TaskSchedule

PROPOSAL = "[problem: What is 2 + 3 times 4? answer: 14]"


def match(game, solver, judge, seed=7):
    seating = {
        "proposer": MockPolicy([PROPOSAL]),
        "solver": MockPolicy([solver]),
        "judge": MockPolicy([judge]),
    }
    (episode,) = play(game, [seating], [seed])
    return episode


# ---- 1. the judge seat ----------------------------------------------------------------------


def test_all_three_seats_play_and_the_judge_is_paid_for_agreeing_with_the_verifier():
    game = ProposerSolverJudge({"calibration": 0})
    right = match(game, "2 + 12 = 14, so [14]", "[correct]")
    assert [t.role for t in right.turns] == ["proposer", "solver", "judge"]
    assert right.outcome == {"proposer": -1.0, "solver": 1.0, "judge": 1.0}
    judge_prompt = right.turns[-1].prompt[-1].content
    assert "2 + 12 = 14, so [14]" in judge_prompt and "answer: 14" not in judge_prompt
    wrong = match(game, "[20]", "[correct]")  # the judge passed a wrong answer
    assert wrong.outcome == {"proposer": 1.0, "solver": -1.0, "judge": 0.0}
    assert wrong.signals["judge_false_pass"] == 1.0 and wrong.signals["judge_agreed"] == 0.0


def test_the_judges_signals_are_logged_in_metrics_csv_as_the_docs_say():
    from selfplay.core.stats import episode_metrics

    game = ProposerSolverJudge({"calibration": 0})
    played = [match(game, "[20]", "[correct]"), match(game, "2 + 12 = 14, so [14]", "[correct]")]
    row = episode_metrics(played, [ep.outcome for ep in played], lambda total: total)
    assert row["signal/judge_false_pass"] == 0.5 and row["signal/judge_agreed"] == 0.5
    assert row["signal/judge_said_correct"] == 1.0
    games_md = (Path(__file__).parent.parent / "docs" / "games.md").read_text()
    for name in ("judge_agreed", "judge_said_correct", "judge_false_pass"):
        assert f"signal/{name}" in games_md and f"signal/{name}" in row


def test_the_judges_score_may_drive_the_solvers_reward_so_shielding_shows():
    game = ProposerSolverJudge({"calibration": 0, "solver_reward": "judge"})
    shielded = match(game, "[20]", "[correct]")
    assert shielded.outcome == {"proposer": -1.0, "solver": 1.0, "judge": 0.0}
    assert shielded.signals["solved"] == 0.0  # the verifier still knows


def test_about_a_tenth_of_matches_are_calibration_items_with_shipped_labels():
    game = ProposerSolverJudge()
    states = [game.reset(seed) for seed in range(600)]
    labelled = [s for s in states if s.label is not None]
    assert 0.06 < len(labelled) / len(states) < 0.14
    item = labelled[0]
    assert item.phase == "judge" and game.current_role(item) == "judge"
    seating = {role: MockPolicy([f"[{item.label}]"]) for role in game.roles}
    (episode,) = play(game, [seating], [item.seed])
    assert [t.role for t in episode.turns] == ["judge"]
    assert episode.outcome == {"proposer": 0.0, "solver": 0.0, "judge": 1.0}


def test_the_judges_agreement_on_held_out_labels_is_a_task_split_measured_every_iteration():
    game = ProposerSolverJudge()
    assert game.iteration_splits == ("judge",)
    agrees = MockPolicy(lambda request: f"[{request.state.label or 'correct'}]")
    contrary = MockPolicy(
        lambda r: "[incorrect]" if (r.state.label or "correct") == "correct" else "[correct]"
    )
    row = task_metrics(game, agrees, limit=20, seed=0, splits=("judge",))
    assert row == {"eval/judge/accuracy": 1.0, "eval/judge/tasks": 20.0, "eval/judge/void": 0.0}
    assert (
        task_metrics(game, contrary, limit=20, seed=0, splits=("judge",))["eval/judge/accuracy"]
        == 0.0
    )


def test_the_run_trains_three_seats_and_logs_elo_and_the_judges_agreement(tmp_path):
    args = ["run", "--game", "proposer-solver-judge", "--iterations", "2", "--matches", "4"]
    args += ["--cold-start", "0", "--set", "generation.max_new_tokens=8"]
    args += ["--set", "eval.matches=2", "--set", "callbacks=[task-schedule]"]
    args += ["--set", "game_options.difficulty_signal=elo", "--set", "game_options.noise=0.5"]
    assert main([*args, "--out", str(tmp_path), "--name", "run"]) == 0
    with (tmp_path / "run" / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    for row in rows:
        assert 0.0 <= float(row["eval/judge/accuracy"]) <= 1.0
        assert float(row["eval/judge/tasks"]) == 2.0
        assert float(row["task/elo/solver"]) + float(row["task/elo/proposer"]) == pytest.approx(
            3000
        )
        assert 0.0 < float(row["task/elo/solver_expects"]) < 1.0


# ---- 2. Elo ratings for the band -------------------------------------------------------------


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


# ---- 3. noise injection ---------------------------------------------------------------------


def test_noise_inserts_a_sentence_before_the_question_and_keeps_every_original_one():
    problem = "A jacket costs 20 dollars. Its price rises by 75%. What is the new price?"
    noisy = add_noise(problem, random.Random(3))
    parts = BOUNDARY.split(noisy)
    assert len(parts) == 4 and parts[-1] == "What is the new price?"
    assert [p for p in parts if p in problem] == BOUNDARY.split(problem)
    assert sum(noisy_version("What is 2 + 2?", seed, 0.25) is not None for seed in range(800)) in (
        range(160, 240)
    )
    assert noisy_version("What is 2 + 2?", 5, 0.0) is None


def test_math_solver_shows_a_noisy_problem_keeps_the_clean_one_and_checks_the_same_answer():
    game = MathSolver({"noise": 1.0, "answers": 1})
    state = game.reset(11)
    assert state.shown != state.problem and state.problem in state.shown
    assert state.shown in game.observe(state, "solver")[-1].content
    right = MockPolicy(lambda request: f"[{request.state.answer}]")
    (episode,) = play(game, [{"solver": right}], [11])
    assert episode.outcome == {"solver": 1.0}
    clean = MathSolver()
    assert clean.reset(11).shown is None and "eval/noisy/accuracy" not in task_metrics(
        clean, right, limit=4, seed=0
    )


def test_held_out_accuracy_is_reported_on_clean_and_noisy_versions_of_the_same_problems():
    game = MathSolver({"noise_eval": True})
    clean = {s.problem_id for s in game.task_states("held_out", 8, 0)}
    noisy = game.task_states("noisy", 8, 0)
    assert {s.problem_id for s in noisy} == clean and all(s.shown for s in noisy)
    keyed = MockPolicy(  # fooled by the noise: answers right only when nothing was inserted
        lambda r: f"[{r.state.answer}]" if not r.state.shown else "[0]"
    )
    row = task_metrics(game, keyed, limit=8, seed=0)
    assert row["eval/held_out/accuracy"] == 1.0 and row["eval/noisy/accuracy"] == 0.0


def test_proposer_games_show_the_solver_noise_and_keep_the_clean_problem():
    game = MathProposerSolver({"noise": 1.0, "validity_check": False})
    seating = {"proposer": MockPolicy([PROPOSAL]), "solver": MockPolicy(["[14]"])}
    (episode,) = play(game, [seating], [4])
    assert episode.state["problem"] == "What is 2 + 3 times 4?"
    assert episode.state["noisy_problem"] != episode.state["problem"]
    assert episode.state["noisy_problem"] in episode.turns[-1].prompt[-1].content
    assert episode.outcome["solver"] == 1.0
    states = game.task_states("noisy", 3, 0)
    assert len(states) == 3 and all(s.noisy_problem for s in states)
