"""Challenger / solver: the contract, one prompt for the G answers, judge per answer, LSP."""

from __future__ import annotations

import csv

import pytest

from selfplay.api.policy import MockPolicy
from selfplay.api.reward import RewardContext
from selfplay.api.types import Completion, Episode
from selfplay.core.algorithms.lsp import LSP
from selfplay.core.commands.cli import main
from selfplay.core.plan.build import build_reward
from selfplay.core.plan.config_loader import build_config
from selfplay.core.rollout import play
from selfplay.core.train.samples import episode_samples
from selfplay.games.challenger_solver import ChallengerSolver
from selfplay.games.text_game import load_bank
from selfplay.testing import check_game


def test_challenger_solver_passes_check_game_as_a_free_text_game():
    report = check_game(ChallengerSolver, matches=200, free_text=True)
    assert report.mean_turns == 5.0


def test_the_solver_answers_g_times_from_one_prompt_that_shows_only_the_question():
    game = ChallengerSolver({"answers": 3})
    state = game.step(game.reset(0), "challenger", "Name a prime above 10.")
    prompts = []
    while game.to_act(state) == "solver":
        prompts.append(game.observe(state, "solver"))
        state = game.step(state, "solver", f"answer {len(prompts)}")
    assert len(prompts) == 3 and prompts[0] == prompts[1] == prompts[2]
    assert prompts[0][-1].content == "Name a prime above 10."
    assert game.outcome(state) == {"challenger": 0.0, "solver": 0.0}
    assert state.answers == ("answer 1", "answer 2", "answer 3")


def test_the_challenger_sees_its_theme_and_held_out_themes_stay_out_of_training():
    game = ChallengerSolver()
    state = game.reset(5)
    assert state.theme in game.observe(state, "challenger")[-1].content
    train = {r["theme"] for r in load_bank("instruction_seeds", "train")}
    heldout = {r["theme"] for r in load_bank("instruction_seeds", "heldout")}
    assert len(train) + len(heldout) >= 60 and len(heldout) >= 10 and not train & heldout
    assert {game.reset(seed).theme for seed in range(200)} <= train


class Tokens(MockPolicy):
    """A mock learner whose completions carry tokens, so its turns become samples."""

    def act(self, requests, *, greedy=False):
        texts = [c.text for c in super().act(requests, greedy=greedy)]
        prompt = lambda r: tuple(ord(c) % 97 for c in r.messages[-1].content[:8])  # noqa: E731
        return [
            Completion(t, (1, 2), (-0.5, -0.5), prompt(r))
            for t, r in zip(texts, requests, strict=True)
        ]


def test_judge_rates_each_answer_and_lsp_turns_the_parts_into_advantages():
    config = build_config(flags={"game": "challenger-solver", "reward": "judge+quality"})
    game = ChallengerSolver({"answers": 2})
    pipeline = build_reward(config, game)
    assert pipeline.components[0].reward.scope == "turn"
    learner = Tokens(["Why is the sky blue?", "Rayleigh scattering.", "No idea."])
    learner.name = "learner"
    episodes: list[Episode] = play(game, [dict.fromkeys(game.roles, learner)], [3])
    # judge: the question 5/10, the answers 8/10 and 2/10; quality 7/7
    answers = iter(["Score: 5", "Score: 8", "Score: 2", "Score: 7"])
    models = lambda name, max_new_tokens=None: MockPolicy(lambda _r: next(answers))  # noqa: E731
    pipeline.bind(RewardContext(game=game, policy=models))
    scores = pipeline(episodes)
    samples = episode_samples(episodes, scores, "learner")
    assert [s.role for s in samples] == ["challenger", "solver", "solver"]
    assert samples[1].group == samples[2].group != samples[0].group
    assert [s.reward for s in samples] == pytest.approx([1.5, 1.8, 1.2])
    # solver: 1.8 - 1.5, 1.2 - 1.5; challenger: -V + V_Q = -0.5 + 1 is also the baseline
    assert LSP()(samples) == pytest.approx([0.0, 0.3, -0.3])


def test_the_documented_command_runs_with_the_tiny_model(tmp_path):
    args = ["run", "--game", "challenger-solver", "--reward", "judge+quality"]
    args += ["--estimator", "lsp", "--iterations", "1", "--matches", "2", "--cold-start", "0"]
    args += ["--set", "generation.max_new_tokens=16", "--set", "game_options.answers=2"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    (metrics,) = tmp_path.glob("*/metrics.csv")
    (row,) = csv.DictReader(metrics.open())
    assert float(row["reward/judge/asked"]) == 2 * 3  # the question and two answers, per match
    assert float(row["reward/quality/asked"]) == 2
    # the judges choose their ratings: even the untrained tiny model's are read
    assert float(row["reward/judge/unparsable"]) == float(row["reward/quality/unparsable"]) == 0
