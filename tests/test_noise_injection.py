"""Noise injection (seed 004): a sentence inserted before the question with every original one
kept, the clean problem checked the same, held-out accuracy on clean and noisy versions."""

from __future__ import annotations

import random

from selfplay.api.policy import MockPolicy
from selfplay.core.evaluate import task_metrics
from selfplay.core.rollout import play
from selfplay.games.banks.noise import BOUNDARY, add_noise, noisy_version
from selfplay.games.math_solver import MathSolver
from selfplay.games.proposers.math_proposer_solver import MathProposerSolver

PROPOSAL = "[problem: What is 2 + 3 times 4? answer: 14]"


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
