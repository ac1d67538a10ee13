"""The LSP estimator on hand-made samples, and the per-term parts it reads."""

from __future__ import annotations

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.reward import EpisodeScores
from selfplay.api.types import Episode, Message, Turn
from selfplay.core.algorithms.lsp import LSP
from selfplay.core.train.samples import episode_samples
from selfplay.plugins.manager import registries


def sample(role, episode, parts, valid=True, reward=None):
    total = sum(parts.values()) if reward is None else reward
    prompt = (1,) if role == "challenger" else (2, episode)
    return Sample(
        "challenger-solver", role, prompt, (3,), (-1.0,), total, prompt, valid, episode, parts
    )


def batch():
    """Two questions. Question 0: quality 0.5, judge 1, 0.5, 0 -> V = 0.5, challenger 0.
    Question 1: quality 0.9, judge 0.2, 0.4 -> V = 0.3, challenger 0.6. Baseline 0.3."""
    return [
        sample("challenger", 0, {"judge": 0.2, "quality": 0.5}),
        sample("solver", 0, {"judge": 1.0, "quality": 0.5}),
        sample("solver", 0, {"judge": 0.5, "quality": 0.5}),
        sample("solver", 0, {"judge": 0.0, "quality": 0.5}),
        sample("challenger", 1, {"judge": 0.7, "quality": 0.9}),
        sample("solver", 1, {"judge": 0.2, "quality": 0.9}),
        sample("solver", 1, {"judge": 0.4, "quality": 0.9}),
    ]


def test_solver_is_group_relative_and_challenger_is_minus_v_plus_quality_minus_baseline():
    advantages = LSP()(batch())
    expected = [-0.3, 0.5, 0.0, -0.5, 0.3, -0.1, 0.1]
    assert advantages == pytest.approx(expected)


def test_without_quality_it_is_lsp_zero():
    advantages = LSP(quality=None)(batch())
    # the quality part now counts as task reward: V = 1.0 and 1.2; challenger -V, baseline -1.1
    assert advantages[0] == pytest.approx(0.1) and advantages[4] == pytest.approx(-0.1)
    assert advantages[1:4] == pytest.approx([0.5, 0.0, -0.5])


def test_scaled_solver_advantages_divide_by_the_group_std():
    advantages = LSP(scale=True)(batch())
    std = (2 * 0.25 / 3) ** 0.5
    assert advantages[1] == pytest.approx(0.5 / (std + 1e-6))


def test_unscored_answers_and_unrated_challengers_are_dropped_not_zeroed():
    samples = batch()
    samples[3] = sample("solver", 0, {"quality": 0.5})  # the judge could not read this answer
    samples[4] = sample("challenger", 1, {"judge": 0.7})  # quality unreadable
    advantages = LSP()(samples)
    assert advantages[3] is None and advantages[4] is None
    # question 0: V = 0.75 over the two scored answers; the only challenger is its own baseline
    assert advantages[1:3] == pytest.approx([0.25, -0.25]) and advantages[0] == pytest.approx(0)


def test_an_invalid_question_keeps_its_penalty_as_challenger_reward():
    samples = [*batch(), sample("challenger", 2, {"invalid": -1.5}, valid=False)]
    advantages = LSP()(samples)
    baseline = (0.0 + 0.6 - 1.5) / 3
    assert advantages[7] == pytest.approx(-1.5 - baseline)
    assert advantages[0] == pytest.approx(-baseline)


def test_the_baseline_is_reduced_across_processes():
    def as_if_another_process_had_one_challenger_at_3(tensor):
        return tensor + tensor.new_tensor([3.0, 1.0])

    advantages = LSP()(batch(), reduce=as_if_another_process_had_one_challenger_at_3)
    assert advantages[0] == pytest.approx(0 - 3.6 / 3)


def test_roles_it_does_not_know_are_a_config_error_naming_the_option():
    with pytest.raises(ConfigError, match=r"estimator_options\.challenger"):
        LSP()([sample("proposer", 0, {"judge": 1.0})])
    assert LSP(challenger="proposer")([sample("proposer", 0, {"quality": 1.0})]) == [None]


def test_lsp_is_registered():
    assert isinstance(registries().estimators.get("lsp")(quality=None), LSP)


def test_samples_split_their_return_by_reward_term():
    turns = tuple(
        Turn(role, "learner", (Message("user", "q"),), "t", "t", valid, None, (1,), (-1.0,), (5,))
        for role, valid in (("challenger", True), ("solver", True), ("solver", False))
    )
    episode = Episode("cs", 0, {"challenger": "learner", "solver": "learner"}, turns, {})
    judge = EpisodeScores(dict.fromkeys(episode.seats), (0.3, 0.8, None))
    quality = EpisodeScores({"challenger": 0.5, "solver": 0.5}, (None, None, None))
    scored = EpisodeScores(
        {"challenger": 0.5, "solver": 0.5}, (0.3, 0.8, None), {"judge": judge, "quality": quality}
    )
    samples = episode_samples([episode, episode], [scored, scored], "learner", 0.5, -1.5)
    assert [s.episode for s in samples] == [0, 0, 0, 1, 1, 1]
    assert samples[0].parts == {"judge": 0.3, "quality": 0.5}
    assert samples[1].parts == {"judge": 0.8, "quality": 0.25}  # one later solver turn: gamma
    assert samples[2].parts == {"invalid": -1.5}
    for s in samples:
        assert sum(s.parts.values()) == pytest.approx(s.reward)
