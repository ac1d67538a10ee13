"""A proposer cannot teach the solver a wrong answer to a problem the game can work out."""

from __future__ import annotations

import random
import re
import time

import pytest

from selfplay.games.banks import TRAINING_TOPICS, WARM_UP_TOPICS, load_bank
from selfplay.games.proposers.computed import IllPosed, computed_answer, varied
from selfplay.games.proposers.math_players import solution_player
from selfplay.games.proposers.math_proposer_solver import MathProposerSolver
from selfplay.games.proposers.math_tasks import held_out_bank
from selfplay.games.proposers.proposer_solver_judge import ProposerSolverJudge
from selfplay.games.verified import game_verifier
from selfplay.testing import check_game
from tests.test_proposer_games import run


@pytest.mark.parametrize(
    "problem, wrong, right",
    [
        ("What is 1 + 1?", "1", "2"),  # a proposer sure of a wrong sum
        ("What is 5 + 5?", "11", "10"),
        ("Compute (28 + 27) * 4 - 28 / 4.", "220", "213"),
        ("What is 2/8 plus 7/9? Give a reduced fraction.", "9/17", "37/36"),
        ("What is 12 divided by 8?", "1", "1.5"),
        ("Solve for x: 6x - 8 = 3x + 11.", "19", "x = 19/3"),
    ],
)
@pytest.mark.parametrize("game", [MathProposerSolver, ProposerSolverJudge])
def test_a_wrong_answer_to_a_computable_problem_is_invalid_however_sure_the_proposer(
    game, problem, wrong, right
):
    proposal = f"[problem: {problem} answer: {wrong}]"
    ep = run(game(), [proposal, f"[{wrong}]"], [f"[{right}]"])
    assert ep.outcome["proposer"] == -1.0 and ep.outcome["solver"] == 0.0
    assert [t.role for t in ep.turns] == ["proposer"]  # no check, and the solver never played
    assert ep.signals["valid_problem"] == 0.0
    # the same problem with its right answer (in any form the verifier accepts) is played
    ep = run(game(), [f"[problem: {problem} answer: {right}]", f"[{right}]"], [f"[{right}]"])
    assert ep.outcome["solver"] == 1.0 and ep.signals["valid_problem"] == 1.0


@pytest.mark.parametrize(
    "problem",
    [
        "What is twice 5 + 5?",  # a word that changes the value
        "What is 5 more than 5?",
        "What is 5 + 5 apples?",
        "What is 3 + 4? It is 7.",  # numbers in two places
        "Wha: is 5 + 6?",  # a typo: not read, so not computed
        "A farmer has 3 cows and buys 4 more. How many cows?",
        "What is 50% of 8?",
        "What is 3x4?",
        "What is 1e3 + 1?",
        "Solve for x: x^2 = 4.",  # not linear
        "Solve for x: sqrt(x) = 2.",
        "What is 2^0.5?",  # not a rational number
        "What is __import__('os').system('true') + 1?",
        "What is " + "1 + " * 60 + "1?",  # too long to compute
    ],
)
def test_a_problem_the_game_cannot_read_for_certain_is_left_to_the_validity_check(problem):
    assert computed_answer(problem) is None
    proposal = f"[problem: {problem} answer: 11]"
    ep = run(MathProposerSolver(), [proposal, "[11]"], ["[11]"])
    assert ep.state["computed"] is None
    assert ep.state["self_verdict"] == "pass" and ep.outcome["solver"] == 1.0
    # unless every problem must be one the game works out (a topic of sums, fractions, ...)
    ep = run(MathProposerSolver({"compute_answers": "always"}), [proposal, "[11]"], ["[11]"])
    assert ep.state["stated"] == "unreadable" and ep.signals["valid_problem"] == 0.0
    assert ep.outcome == {"proposer": -1.0, "solver": 0.0}


@pytest.mark.parametrize(
    "problem",
    [
        "What is 1 + answer:",  # a proposal cut short, seen in training
        "What is 8 +",
        "What is 5 + 6 + ?",
        "What is 1/0?",
        "What is 9^9^9^9^9?",  # too large to work out
        "Solve for y: x + 1 = 2.",  # the unknown asked for is not in it
        "Solve for x: x - x = 1.",  # no root
        "Solve for x: 3x + 2.",  # nothing to solve
    ],
)
@pytest.mark.parametrize("game", [MathProposerSolver, ProposerSolverJudge])
def test_a_problem_that_reads_as_arithmetic_without_a_single_value_is_invalid(game, problem):
    start = time.perf_counter()
    with pytest.raises(IllPosed):
        computed_answer(problem)
    assert time.perf_counter() - start < 1.0
    ep = run(game(), [f"[problem: {problem} answer: 9]", "[9]"], ["[9]"])
    assert ep.state["stated"] == "ill-posed" and ep.signals["valid_problem"] == 0.0
    assert ep.outcome["proposer"] == -1.0 and ep.outcome["solver"] == 0.0


@pytest.mark.parametrize("topic", [*TRAINING_TOPICS, *WARM_UP_TOPICS])
def test_the_game_agrees_with_the_bank_on_every_problem_it_computes(topic):
    verifier = game_verifier(MathProposerSolver())
    problems = load_bank(topic, "train") + load_bank(topic, "held_out")
    computed = {p.problem: computed_answer(p.problem) for p in problems}
    for problem in problems:
        value = computed[problem.problem]
        if value is not None:
            assert verifier.verify(problem.answer, value).status == "pass", problem
    share = sum(v is not None for v in computed.values()) / len(problems)
    # the arithmetic topic's word problems ("A box holds 6 pencils...") are left to the check
    assert share == 1.0 if topic != "arithmetic" else 0.5 < share < 1.0


def test_always_still_plays_a_problem_it_works_out_with_its_right_answer():
    game = MathProposerSolver({"compute_answers": "always", "topics": ["sums"]})
    ep = run(game, ["[problem: What is 4 + 5? answer: 9]", "[9]"], ["[9]"])
    assert ep.state["computed"] == "9" and ep.outcome["solver"] == 1.0


def test_the_answer_check_can_be_turned_off_and_its_verifier_timeout_voids():
    proposal = "[problem: What is 1 + 1? answer: 1]"
    ep = run(MathProposerSolver({"compute_answers": "off"}), [proposal, "[1]"], ["[1]"])
    assert ep.outcome["solver"] == 1.0  # the old rule: self-consistency alone
    game = MathProposerSolver()
    verifier = game_verifier(game)

    class Timeout:
        status = "timeout"

    game.__dict__["_verifier"] = type("V", (), {"verify": lambda self, a, r: Timeout()})()
    ep = run(game, [proposal, "[1]"], ["[2]"])
    assert ep.outcome == {"proposer": 0.0, "solver": 0.0}
    assert "answer check" in ep.state["void"]
    assert verifier.verify("2", "2").status == "pass"


# ---- solver_reference: game, the game's value as the solver's reference (Absolute Zero) ----

GAME_REFERENCE = {"solver_reference": "game"}


@pytest.mark.parametrize("game", [MathProposerSolver, ProposerSolverJudge])
def test_the_game_value_scores_the_solver_even_when_the_proposer_is_wrong(game):
    proposal = "[problem: What is 5 + 5? answer: 11]"
    ep = run(game(GAME_REFERENCE), [proposal], ["[10]"])
    assert [t.role for t in ep.turns][:2] == ["proposer", "solver"]  # no validity check
    assert ep.state["stated"] == "fail" and ep.signals["valid_problem"] == 0.0
    assert ep.outcome["solver"] == 1.0 and ep.outcome["proposer"] == -1.0
    # agreeing with the proposer's wrong answer loses, and the proposer is still refused
    ep = run(game(GAME_REFERENCE), [proposal], ["[11]"])
    assert ep.outcome["solver"] == -1.0 and ep.outcome["proposer"] == -1.0
    assert ep.signals["solved"] == 0.0


@pytest.mark.parametrize("game", [MathProposerSolver, ProposerSolverJudge])
def test_a_right_problem_under_the_game_value_is_played_for_the_usual_stakes(game):
    proposal = "[problem: Solve for x: 6x - 8 = 3x + 11. answer: 19/3]"
    ep = run(game(GAME_REFERENCE), [proposal], ["[x = 19/3]"])
    assert ep.state["computed"] == "19/3" and ep.signals["valid_problem"] == 1.0
    assert ep.outcome["solver"] == 1.0 and ep.outcome["proposer"] == -1.0
    ep = run(game(GAME_REFERENCE), [proposal], ["[6]"])
    assert ep.outcome["solver"] == -1.0 and ep.outcome["proposer"] == 1.0


def test_what_the_game_cannot_work_out_keeps_the_proposer_as_reference():
    word = "[problem: What is twice 5 + 5? answer: 20]"
    ep = run(MathProposerSolver(GAME_REFERENCE), [word, "[20]"], ["[20]"])
    assert [t.role for t in ep.turns] == ["proposer", "proposer", "solver"]  # checked
    assert ep.outcome["solver"] == 1.0
    for options, stated in (({}, "ill-posed"), ({"compute_answers": "always"}, "unreadable")):
        problem = "What is 1 + answer:" if stated == "ill-posed" else "What is twice 5 + 5?"
        game = MathProposerSolver({**GAME_REFERENCE, **options})
        ep = run(game, [f"[problem: {problem} answer: 9]", "[9]"], ["[9]"])
        assert ep.state["stated"] == stated and [t.role for t in ep.turns] == ["proposer"]
        assert ep.outcome == {"proposer": -1.0, "solver": 0.0}


def test_the_game_value_needs_the_game_to_work_answers_out():
    with pytest.raises(ValueError, match=r"compute_answers=off.*solver_reference"):
        MathProposerSolver({**GAME_REFERENCE, "compute_answers": "off"})


@pytest.mark.parametrize("game", [MathProposerSolver, ProposerSolverJudge])
def test_both_games_keep_the_contract_under_the_game_value(game):
    report = check_game(game(GAME_REFERENCE), matches=40)
    assert report.matches == 40


# ---- new_problems: the rules ask for a new problem, not the example shown ------------------


@pytest.mark.parametrize("game", [MathProposerSolver, ProposerSolverJudge])
def test_a_copy_of_the_example_is_invalid_when_new_problems_are_asked_for(game):
    state = game().initial(7, random.Random(7))
    copy = f"[problem: {state.seed_problem.lower()}  answer: {state.seed_answer}]"
    options = {"new_problems": True, "solver_reference": "game"}
    ep = run(game(options), [copy, f"[{state.seed_answer}]"], [f"[{state.seed_answer}]"])
    assert ep.state["stated"] == "copied" and [t.role for t in ep.turns] == ["proposer"]
    assert ep.outcome["proposer"] == -1.0 and ep.outcome["solver"] == 0.0
    # without the option the copy is played
    ep = run(game(), [copy, f"[{state.seed_answer}]"], [f"[{state.seed_answer}]"])
    assert ep.state["stated"] != "copied" and ep.outcome["solver"] == 1.0


@pytest.mark.parametrize("topic", ["sums", "fractions", "linear-equations"])
def test_the_demonstrator_varies_the_numbers_and_states_the_new_value(topic):
    game = MathProposerSolver({"new_problems": True, "topics": [topic]})
    verifier = game_verifier(game)
    for seed in range(12):
        rng = random.Random(seed)
        state = game.initial(seed, rng)
        new, value = varied(state.seed_problem, rng)
        assert new != state.seed_problem and computed_answer(new) == value
        assert re.sub(r"\d+", "N", new) == re.sub(r"\d+", "N", state.seed_problem)
        proposal = solution_player(game, state, "proposer", random.Random(seed))
        ep = run(game, [proposal, f"[{proposal.split('answer: ')[1][:-1]}]"], ["[0]"])
        assert ep.state["stated"] == "pass" and ep.signals["valid_problem"] == 1.0, proposal
        assert verifier.verify(ep.state["answer"], ep.state["computed"]).status == "pass"


@pytest.mark.parametrize("game", [MathProposerSolver, ProposerSolverJudge])
def test_a_held_out_problem_is_never_set_to_the_solver_when_new_problems_are_asked_for(game):
    """The held-out evaluation measures problems the solver never met in training: a
    proposal of one, word for word (case and spacing aside), is invalid, even where the
    game's value would otherwise have sent it to the solver."""
    options = {"new_problems": True, "solver_reference": "game", "topics": ["sums"]}
    held_out = held_out_bank(["sums"])[0]
    assert held_out.problem in {s.problem for s in game(options).task_states("held_out", 99, 0)}
    proposal = f"[problem: {held_out.problem.upper()}  answer: {held_out.answer}]"
    ep = run(game(options), [proposal, f"[{held_out.answer}]"], [f"[{held_out.answer}]"])
    assert ep.state["stated"] == "held-out" and [t.role for t in ep.turns] == ["proposer"]
    assert ep.outcome["proposer"] == -1.0 and ep.outcome["solver"] == 0.0
    assert ep.signals["valid_problem"] == 0.0
    # without the option it is played, and the solver is scored on it
    options["new_problems"] = False
    ep = run(game(options), [proposal, f"[{held_out.answer}]"], [f"[{held_out.answer}]"])
    assert ep.state["stated"] == "pass" and ep.outcome["solver"] == 1.0


def test_the_demonstrator_never_proposes_a_held_out_problem():
    """One-digit sums have a hundred variations, and some are held out: the demonstrator the
    cold start learns from skips those."""
    game = MathProposerSolver({"new_problems": True, "topics": ["sums"]})

    def terms(problem: str) -> tuple[str, ...]:
        return tuple(re.findall(r"\d+|\+", problem))

    held_out = {terms(p.problem) for p in held_out_bank(["sums"])}
    proposed, reached = set(), set()
    for seed in range(400):
        state = game.initial(seed, random.Random(seed))
        proposal = solution_player(game, state, "proposer", random.Random(seed))
        proposed.add(terms(proposal.split(" answer:")[0]))
        reached.add(terms(varied(state.seed_problem, random.Random(seed))[0]))
    assert len(proposed) > 150 and not proposed & held_out
    assert reached & held_out  # the same variations without the rule do reach them


def test_a_word_problem_is_not_varied():
    assert varied("A box holds 6 pencils. How many in 3 boxes?", random.Random(0)) is None
