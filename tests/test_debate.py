"""Debate: the contract, turn order and visibility, the bank's splits, the judge that decides."""

from __future__ import annotations

import csv
import itertools

import pytest

from selfplay.api.policy import MockPolicy
from selfplay.api.reward import RewardContext
from selfplay.core.commands.cli import main
from selfplay.core.plan.build import build_reward
from selfplay.core.plan.config_loader import build_config
from selfplay.core.rollout import play
from selfplay.games.debate import Debate
from selfplay.games.text_game import load_bank
from selfplay.testing import check_game


def test_debate_passes_check_game_as_a_free_text_game():
    report = check_game(Debate, matches=200, free_text=True)
    assert report.mean_turns == 4.0


def test_without_free_text_check_game_rejects_it():
    with pytest.raises(AssertionError, match="fullwidth look-alike"):
        check_game(Debate, matches=5)


def test_sides_alternate_and_each_sees_the_others_last_argument():
    game = Debate({"rebuttals": 2})
    state = game.reset(4)
    spoken = []
    while (role := game.to_act(state)) is not None:
        prompt = game.observe(state, role)[-1].content
        assert state.question in prompt
        if spoken:
            assert f"{spoken[-1]} says {len(spoken)}" in prompt
        state = game.step(state, role, f"{role} says {len(spoken) + 1}")
        spoken.append(role)
    assert len(spoken) == 6 and spoken[0] == state.first
    assert all(a != b for a, b in itertools.pairwise(spoken))
    assert game.outcome(state) == {"pro": 0.0, "con": 0.0}


def test_the_opening_side_is_drawn_from_the_seed():
    assert {Debate().reset(seed).first for seed in range(20)} == {"pro", "con"}


def test_empty_and_overlong_arguments_are_invalid_moves():
    game = Debate({"max_chars": 10})
    state = game.reset(0)
    role = game.to_act(state)
    assert game.action_of("<think>hmm</think>  ", state, role)[0] is None
    assert "11 characters" in game.action_of("x" * 11, state, role)[1]
    assert game.action_of("<think>hmm</think> Yes.", state, role)[0] == "Yes."


def test_held_out_questions_are_never_drawn_in_training():
    train = {r["question"] for r in load_bank("debate_questions", "train")}
    heldout = {r["question"] for r in load_bank("debate_questions", "heldout")}
    assert len(train) + len(heldout) >= 60 and len(heldout) >= 10 and not train & heldout
    assert {Debate().reset(seed).question for seed in range(200)} <= train
    assert {Debate({"split": "heldout"}).reset(seed).question for seed in range(50)} <= heldout


def test_judge_defaults_to_pairwise_and_pays_plus_minus_one():
    config = build_config(flags={"game": "debate", "reward": "judge+quality"})
    game = Debate()
    pipeline = build_reward(config, game)
    judge = pipeline.components[0].reward
    assert (judge.mode, judge.scope) == ("pairwise", "transcript")
    episodes = play(game, [dict.fromkeys(game.roles, MockPolicy(["An argument."]))] * 2, [1, 2])
    quality = iter(["Score: 7", "no score"])

    def answer(request):  # the judge always prefers pro, whichever side it is shown as
        prompt = request.messages[0].content
        if "Winner:" in prompt:
            return "Winner: A" if "A (pro)" in prompt else "Winner: B"
        return next(quality)

    models = lambda name, max_new_tokens=None: MockPolicy(answer)  # noqa: E731
    pipeline.bind(RewardContext(game=game, policy=models))
    scores = pipeline(episodes)
    assert [s.parts["judge"].roles for s in scores] == [{"pro": 1.0, "con": -1.0}] * 2
    assert scores[0].roles == {"pro": 2.0, "con": 0.0}  # + quality 7/7 to both
    assert scores[1].roles == {"pro": 1.0, "con": -1.0}  # quality unreadable: masked


def test_user_reward_options_override_the_game_defaults():
    flags = {"game": "debate", "reward": "judge", "reward_options": {"judge": {"scale": 5}}}
    judge = build_reward(build_config(flags=flags), Debate()).components[0].reward
    assert judge.mode == "pairwise" and judge.scale == 5
    flags["reward_options"] = {"judge": {"mode": "pointwise"}}
    assert build_reward(build_config(flags=flags), Debate()).components[0].reward.mode == (
        "pointwise"
    )


def test_the_documented_command_runs_with_the_tiny_model(tmp_path):
    args = ["run", "--game", "debate", "--reward", "judge+quality", "--iterations", "1"]
    args += ["--matches", "2", "--set", "generation.max_new_tokens=16"]  # no scripted players:
    # the cold start is skipped, so the command works exactly as documented
    assert main([*args, "--out", str(tmp_path)]) == 0
    (metrics,) = tmp_path.glob("*/metrics.csv")
    (row,) = csv.DictReader(metrics.open())
    assert float(row["reward/judge/asked"]) == 2 and float(row["reward/quality/asked"]) == 2
    # the judges choose their verdict lines: even the untrained tiny model's are read
    assert float(row["reward/judge/unparsable"]) == float(row["reward/quality/unparsable"]) == 0
