"""The maths games under the math verifier's attacks: the action is the last bracketed span,
and the verdict holds the whole reply to one answer (a second answer stated anywhere fails).

The verifier's own attack corpora, kind by kind, are in test_verifiers_math_attacks.py.
"""

from __future__ import annotations


def test_math_solver_fails_a_reply_that_also_states_another_answer():
    from selfplay.games.math_solver import MathSolver

    game = MathSolver()
    try:
        state = game.reset(3)
        answer = state.answer
        verdicts = []
        for text in (
            f"so [{answer}]",
            f"\\boxed{{{answer}}} so [{answer}]",
            f"\\boxed{{{answer}1}} so [{answer}]",
            f"Answer: {answer}1\n[{answer}]",
        ):
            moved, action = game.judge(state, "solver", text)
            assert action == answer  # the action is still the last span
            verdicts.append(moved.verdicts[-1])
        assert verdicts == ["pass", "pass", "fail", "fail"]
        assert not game.check_answer(state, "solver", f"\\boxed{{{answer}1}} [{answer}]")
    finally:
        game_verifier_close(game)


def test_math_proposer_solver_holds_solver_and_check_to_one_answer():
    from selfplay.api.policy import MockPolicy
    from selfplay.core.rollout import play
    from selfplay.games.proposers.math_proposer_solver import MathProposerSolver

    proposal = "[problem: What is 2 + 3 times 4? answer: 14]"

    def outcome(proposer, solver):
        seating = {"proposer": MockPolicy(proposer), "solver": MockPolicy(solver)}
        (episode,) = play(MathProposerSolver(), [seating], [7])
        return episode.outcome

    assert outcome([proposal, "[14]"], ["[14]"]) == {"solver": 1.0, "proposer": -1.0}
    assert outcome([proposal, "[14]"], ["Answer: 20\nso [14]"]) == {"solver": -1.0, "proposer": 1.0}
    assert outcome([proposal, "\\boxed{3} [14]"], ["[14]"])["proposer"] == -1.0  # invalid
    asked = outcome([proposal, "[14]", "[decline]"], ["[ask: is it whole?]", "[14]"])
    assert asked == {"solver": 1.0, "proposer": -1.0}


def game_verifier_close(game) -> None:
    made = game.__dict__.get("_verifier")
    if made is not None:
        made.close()
