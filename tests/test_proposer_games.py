"""Math proposer/solver and proposer/solver/judge: contract, validity check, verifier outcomes."""

from __future__ import annotations

import csv

import pytest

from selfplay.api.policy import MockPolicy
from selfplay.core.commands.cli import main
from selfplay.core.evaluate import task_metrics
from selfplay.core.rollout import play
from selfplay.games.proposers.math_proposer_solver import MathProposerSolver
from selfplay.games.proposers.proposer_solver_judge import ProposerSolverJudge
from selfplay.testing import check_game

PROPOSAL = "Here it is. [problem: What is 2 + 3 times 4? answer: 14]"


def run(game, proposer_texts, solver_texts, judge_texts=("[correct]",)):
    seating = {"proposer": MockPolicy(proposer_texts), "solver": MockPolicy(solver_texts)}
    if "judge" in game.roles:
        seating["judge"] = MockPolicy(list(judge_texts))
    (episode,) = play(game, [seating], [7])
    return episode


@pytest.mark.parametrize("game", [MathProposerSolver, ProposerSolverJudge])
def test_both_games_keep_the_contract(game):
    report = check_game(game, matches=60)
    assert report.matches == 60 and report.max_attempts >= 2


def test_a_solved_problem_pays_the_solver():
    ep = run(MathProposerSolver(), [PROPOSAL, "[14]"], ["2 + 12 = 14, so [14]"])
    assert ep.outcome == {"solver": 1.0, "proposer": -1.0}
    assert ep.signals["solved"] == 1.0 and ep.signals["valid_problem"] == 1.0


def test_a_wrong_answer_pays_the_proposer_and_equivalent_forms_count():
    assert run(MathProposerSolver(), [PROPOSAL, "[14]"], ["[20]"]).outcome["proposer"] == 1.0
    half = "[problem: What is one half of one? answer: 1/2]"
    assert run(MathProposerSolver(), [half, "[0.5]"], ["[2/4]"]).outcome["solver"] == 1.0


def test_a_problem_the_proposer_cannot_solve_again_is_invalid():
    ep = run(MathProposerSolver(), [PROPOSAL, "[20]"], ["[14]"])
    assert ep.outcome == {"proposer": -1.0, "solver": 0.0}
    assert [t.role for t in ep.turns] == ["proposer", "proposer"]  # the solver never played
    assert ep.signals["valid_problem"] == 0.0
    # the check turn does not show the proposer its own answer
    assert "14" not in ep.turns[1].prompt[-1].content


def test_clarifying_questions_are_answered_and_counted_as_a_signal():
    proposer = [PROPOSAL, "[14]", "[reply: multiply first]", "[decline]"]
    solver = ["[ask: which comes first?]", "[ask: are you sure?]", "[14]"]
    ep = run(MathProposerSolver({"max_questions": 2}), proposer, solver)
    assert ep.signals["questions"] == 2.0 and ep.signals["replies"] == 1.0
    assert "multiply first" in ep.turns[-1].prompt[-1].content
    assert ep.outcome["solver"] == 1.0


def test_a_question_beyond_the_limit_is_an_invalid_move():
    game = MathProposerSolver({"max_questions": 0})
    state = game.step(game.step(game.reset(1), "proposer", PROPOSAL), "proposer", "[14]")
    after = game.step(state, "solver", "[ask: may I?]")
    assert after.invalid == {"solver": 1} and "no questions left" in after.error


def test_an_unreadable_answer_in_a_proposal_is_an_invalid_move_not_a_void():
    game = MathProposerSolver()
    state = game.step(game.reset(1), "proposer", "[problem: What is 2 + 2? answer: four]")
    assert state.invalid == {"proposer": 1} and "checker can read" in state.error


def test_a_verifier_timeout_voids_the_match(monkeypatch):
    game = MathProposerSolver()
    monkeypatch.setattr(game, "verify", lambda candidate, reference: "timeout")
    ep = run(game, [PROPOSAL, "[14]"], ["[14]"])
    assert ep.outcome == {"proposer": 0.0, "solver": 0.0}
    assert ep.signals["void"] == 1.0 and "timeout" in ep.state["void"]


def test_the_transfer_topic_cannot_be_trained_on():
    with pytest.raises(ValueError, match="transfer check"):
        MathProposerSolver({"topics": ["percentages"]})


def test_the_solution_player_proposes_valid_problems_and_solves_them():
    from selfplay.api.policy import ScriptedPolicy

    game = MathProposerSolver({"topics": ["sums"]})
    solution = ScriptedPolicy("solution")
    episodes = play(game, [{"proposer": solution, "solver": solution}] * 6, list(range(6)))
    assert all(ep.state["self_verdict"] == "pass" for ep in episodes)  # valid problems
    assert all(ep.outcome["solver"] == 1.0 for ep in episodes)  # and solved


def test_the_one_digit_sums_are_a_topic_and_held_out_from_the_topics_trained_on():
    game = MathProposerSolver({"topics": ["sums"]})
    states = game.task_states("held_out", limit=50, seed=0)
    assert states and {s.topic for s in states} == {"sums"}
    default = MathProposerSolver().task_states("held_out", limit=200, seed=0)
    assert {s.topic for s in default} == {"arithmetic", "linear-equations", "fractions"}


def test_held_out_and_transfer_accuracy_of_a_greedy_solver():
    game = MathProposerSolver()
    right = MockPolicy(lambda request: f"[{request.state.answer}]")
    wrong = MockPolicy(lambda request: "[123456789]")
    metrics = task_metrics(game, right, limit=6, seed=1)
    assert metrics["eval/held_out/accuracy"] == 1.0 and metrics["eval/transfer/accuracy"] == 1.0
    assert metrics["eval/held_out/tasks"] == 6.0
    assert task_metrics(game, wrong, limit=6, seed=1)["eval/held_out/accuracy"] == 0.0
    assert right.calls == [6, 6]  # one batch per split


def test_the_judge_game_asks_for_the_scheduled_difficulty_on_a_seed_problem():
    game = ProposerSolverJudge({"calibration": 0})
    game.schedule.difficulty = 2.5
    state = game.reset(3)
    assert state.difficulty == 2.5 and state.seed_id.startswith(state.topic)
    system, user = game.observe(state, "proposer")
    assert "difficulty: 2.50" in system.content and state.seed_problem in user.content
    ep = run(
        game, ["[problem: A box has 12 pens and 3 red caps. How many pens? answer: 12]"], ["[12]"]
    )
    assert ep.outcome == {"solver": 1.0, "proposer": -1.0, "judge": 1.0}


def _cli(game, tmp_path, *extra):
    args = ["run", "--game", game, "--iterations", "1", "--matches", "2", "--cold-start", "0"]
    args += ["--set", "generation.max_new_tokens=16", "--set", "eval.matches=2"]
    return main([*args, *extra, "--out", str(tmp_path), "--name", "run"])


def test_cli_runs_math_proposer_solver(tmp_path):
    assert _cli("math-proposer-solver", tmp_path) == 0
    assert (tmp_path / "run" / "episodes.jsonl").read_text().count("\n") == 2


def test_cli_runs_proposer_solver_judge_with_the_schedule_and_task_evaluation(tmp_path):
    extra = ["--set", "callbacks=[task-schedule]", "--set", "eval.every=1"]
    assert _cli("proposer-solver-judge", tmp_path, *extra) == 0
    with (tmp_path / "run" / "metrics.csv").open() as f:
        row = next(csv.DictReader(f))
    assert 0.0 <= float(row["eval/held_out/accuracy"]) <= 1.0
    assert "eval/transfer/accuracy" in row and "task/difficulty" in row
