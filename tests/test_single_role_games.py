"""The single-role games: math-solver (verdict per answer, hints, tasks) and instruct."""

from __future__ import annotations

import pytest

from selfplay.api.game import InvalidMoveRules
from selfplay.api.policy import MockPolicy
from selfplay.api.reward import RewardContext
from selfplay.api.tasks import HINTED_TURNS, ReferenceAnswers, TaskGame
from selfplay.core.evaluate import evaluate, task_metrics
from selfplay.core.plan.build import build_reward
from selfplay.core.plan.config_loader import build_config
from selfplay.core.rollout import play
from selfplay.core.train.samples import episode_samples
from selfplay.games.banks import load_bank
from selfplay.games.instruct import Instruct
from selfplay.games.math_solver import MathSolver
from selfplay.testing import check_game


def playthrough(game, texts):
    state = game.reset(3)
    for text in texts:
        state = game.step(state, "solver", text)
    return state


def test_math_solver_keeps_the_contract():
    check_game(MathSolver, matches=150)
    check_game(MathSolver, matches=60, options={"rationalize": True, "answers": 2})


def test_every_answer_has_its_own_verdict_and_the_payoff_is_the_share_that_passed():
    game = MathSolver({"answers": 3})
    right = f"[{game.reset(3).answer}]"
    state = playthrough(game, [right, "[0.123]", right])
    assert state.verdicts == ("pass", "fail", "pass")
    assert game.outcome(state) == {"solver": pytest.approx(2 / 3)}
    prompts = {game.observe(game.reset(3), "solver")[-1].content}
    assert game.reset(3).problem in prompts.pop()


def test_an_invalid_attempt_is_a_turn_with_the_verdict_invalid():
    game = MathSolver({"answers": 2}, rules=InvalidMoveRules(allowance=1))
    right = f"[{game.reset(3).answer}]"
    state = playthrough(game, ["no brackets here", right, right])
    assert state.verdicts == ("invalid", "pass", "pass")


def test_when_every_answer_fails_a_hinted_retry_follows_and_is_marked():
    game = MathSolver({"answers": 2, "rationalize": True}, rules=InvalidMoveRules(allowance=2))
    start = game.reset(3)
    state = playthrough(game, ["[0.5]", "oops", "[0.25]"])  # fail, invalid, fail
    assert game.to_act(state) == "solver"
    hint = game.observe(state, "solver")[-1].content
    assert f"the answer is {start.answer}" in hint and start.problem in hint
    state = game.step(state, "solver", f"{start.solution}")
    assert getattr(state, HINTED_TURNS) == (3,)  # the fourth turn: 0, 1 (invalid), 2, 3
    assert state.verdicts[-1] == "pass" and game.to_act(state) is None
    assert game.outcome(state) == {"solver": 0.0}  # the hinted answer does not count
    passed = playthrough(game, [f"[{start.answer}]", "[0.5]"])
    assert game.to_act(passed) is None  # one answer passed: no hint


def test_the_verdict_reward_scores_each_answer_and_samples_share_one_group():
    config = build_config(flags={"game": "math-solver"})
    game = MathSolver({"answers": 2})
    reward = build_reward(config, game)
    assert [c.term.name for c in reward.components] == ["verdict"]  # the game's default
    reward.bind(RewardContext(game=game))
    right = MockPolicy(lambda r: f"[{r.state.answer}]" if not r.state.attempts else "[0.5]")
    right.name = "learner"
    episodes = play(game, [{"solver": right}], [3])
    scores = reward(episodes)
    assert scores[0].turns == (1.0, 0.0)
    assert reward.metrics()["reward/verdict/passed"] == 1.0
    assert episode_samples(episodes, scores, "learner") == []  # a mock writes no tokens


def test_math_solver_is_a_task_game_with_reference_answers():
    game = MathSolver()
    assert isinstance(game, TaskGame) and isinstance(game, ReferenceAnswers)
    right = MockPolicy(lambda request: f"[{request.state.answer}]")
    metrics = task_metrics(game, right, limit=5, seed=1)
    assert metrics["eval/held_out/accuracy"] == 1.0 and metrics["eval/held_out/tasks"] == 5
    assert metrics["eval/transfer/accuracy"] == 1.0
    assert right.calls == [5, 5]  # one greedy answer per task, one batch per split
    held_out = {p.problem for t in game.options.topics for p in load_bank(t, "held_out")}
    assert {s.problem for s in game.task_states("held_out", 5, 1)} <= held_out
    state = game.reset(0)
    assert game.reference_answer(state, "solver").endswith(f"[{state.answer}]")
    assert evaluate(game, right, matches=4) == {}  # no opponent to face in a one-role game


def test_training_never_draws_held_out_or_transfer_problems():
    game = MathSolver()
    drawn = {game.reset(seed).problem_id for seed in range(300)}
    assert all("held" not in pid for pid in drawn)
    held = {p.id for t in game.options.topics for p in load_bank(t, "held_out")}
    assert not drawn & held
    with pytest.raises(ValueError, match="transfer check"):
        MathSolver({"topics": ["percentages"]})


def test_instruct_keeps_the_contract_and_judges_each_answer_on_the_strict_scale():
    check_game(Instruct, matches=100, free_text=True)
    game = Instruct({"answers": 3})
    state = game.reset(0)
    prompts = []
    while game.to_act(state) is not None:
        prompts.append(game.observe(state, "assistant"))
        state = game.step(state, "assistant", f"answer {len(prompts)}")
    assert len(prompts) == 3 and prompts[0] == prompts[1] == prompts[2]
    assert game.reward_defaults["judge"] == {
        "scope": "turn",
        "scale": 5,
        "template": "judge_strict",
    }
    assert Instruct.default_reward == "judge"


def test_best_of_n_by_verifier_is_pass_at_n_and_by_reward_takes_the_top_score():
    from selfplay.core.models.best_of import BestOfN, reward_chooser, verifier_chooser

    game = MathSolver()

    def sampler() -> MockPolicy:  # of every three answers it writes, only the third is right
        calls = iter(range(10**6))
        right = lambda r: f"[{r.state.answer}]" if next(calls) % 3 == 2 else "[0.125]"  # noqa: E731
        return MockPolicy(right)

    greedy = MockPolicy(lambda r: "[0.125]")
    assert task_metrics(game, greedy, limit=4, seed=1)["eval/held_out/accuracy"] == 0.0
    found = task_metrics(game, BestOfN(sampler(), 3, verifier_chooser), 4, 1, name="pass@3")
    assert found["eval/held_out/pass@3"] == 1.0
    two = task_metrics(game, BestOfN(sampler(), 2, verifier_chooser), 4, 1, name="pass@2")
    assert two["eval/held_out/pass@2"] == 0.5  # with two samples the right one is often missed
    calls = iter(range(10**6))
    by_length = MockPolicy(lambda r: "[" + "1" * (1 + next(calls) % 3) + "]")
    longest = BestOfN(by_length, 3, reward_chooser(_LengthReward()))
    (completion,) = longest.act([_request(game)])
    assert completion.text == "[111]"


class _LengthReward:
    """A stand-in reward pipeline: each one-turn match scores its text's length."""

    def __call__(self, episodes):
        from selfplay.api.reward import EpisodeScores

        return [EpisodeScores({"solver": float(len(ep.turns[0].text))}, (None,)) for ep in episodes]


def _request(game):
    import random

    from selfplay.api.policy import Request

    state = game.reset(0)
    return Request(game, state, "solver", tuple(game.observe(state, "solver")), random.Random(0))
