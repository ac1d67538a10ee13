"""Estimators and the policy-gradient loss, checked against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from selfplay.api.estimator import Sample
from selfplay.api.objective import Scored
from selfplay.api.types import Episode, Message, Turn
from selfplay.core.algorithms.grpo import GRPO
from selfplay.core.algorithms.pg import policy_gradient_loss
from selfplay.core.algorithms.rae import RAE
from selfplay.core.algorithms.reinforce_pp import Plain, ReinforcePP
from selfplay.core.models.scoring import pack, score
from selfplay.core.train.samples import episode_samples


def sample(role: str, reward: float, group=(1,)) -> Sample:
    return Sample("g", role, (1, 2), (3,), (-0.5,), reward, tuple(group))


def test_rae_keeps_one_baseline_per_role_and_moves_it_by_ema():
    rae = RAE(decay=0.5)
    first = rae([sample("a", 1.0), sample("a", 0.0), sample("b", -1)])
    assert first == [0.5, -0.5, 0.0]  # the first batch sets each role's baseline
    second = rae([sample("a", 1.0), sample("b", 1)])
    assert rae.baselines == {"g/a": 0.75, "g/b": 0.0}
    assert second == [0.25, 1.0]
    assert all(isinstance(a, float) for a in second)


def test_rae_integer_rewards_do_not_truncate_advantages():
    rae = RAE(decay=0.9)
    rae([sample("a", 1), sample("a", 0)])
    out = rae([sample("a", 1)])
    assert out[0] == pytest.approx(1 - (0.9 * 0.5 + 0.1 * 1))


def test_rae_state_round_trips_and_drop_zero_drops():
    rae = RAE(decay=0.5, drop_zero=True)
    assert rae([sample("a", 1.0), sample("a", 1.0)]) == [None, None]
    copy = RAE(decay=0.5)
    copy.load_state_dict(rae.state_dict())
    assert copy.baselines == rae.baselines


def test_rae_per_opponent_keeps_a_baseline_per_opponent_with_a_fixed_shape():
    def against(opponent: str, reward: float) -> Sample:
        return Sample("g", "a", (1, 2), (3,), (-0.5,), reward, (1,), opponent=opponent)

    batch = [against("scripted:random", 1.0), against("scripted:minimax", -1.0)]
    assert RAE(decay=0.0)(batch) == [1.0, -1.0]  # one baseline per role: 0, both moves "count"
    per = RAE(decay=0.0, per_opponent=True)
    per.bind("g", ["a", "b"])
    assert per(batch) == [0.0, 0.0]  # each result is what that opponent leads one to expect
    shapes = []

    def record(tensor):
        shapes.append(tensor.shape)
        return tensor

    per([against("learner", 1.0)], reduce=record)
    per([against("snapshot:7", 1.0), against("x", 0.0)], reduce=record)
    assert shapes[0] == shapes[1]  # the same tensor on every process, whoever it met


def test_grpo_centres_within_groups_and_scales_by_std():
    samples = [sample("a", 1, (1,)), sample("a", 0, (1,)), sample("a", 5, (2,))]
    assert GRPO(scale=False)(samples) == [0.5, -0.5, 0.0]
    scaled = GRPO(scale=True)(samples)
    assert scaled[0] == pytest.approx(1.0, abs=1e-5) and scaled[1] == pytest.approx(-1.0, abs=1e-5)


def test_reinforce_pp_standardises_over_the_batch_and_plain_passes_through():
    out = ReinforcePP()([sample("a", r) for r in (1.0, 2.0, 3.0)])
    std = math.sqrt(2 / 3)
    assert out == pytest.approx([-1 / std, 0.0, 1 / std], rel=1e-5)
    assert Plain()([sample("a", 2)]) == [2]


def test_reduce_is_used_for_cross_process_statistics():
    doubled = RAE(decay=0.0)([sample("a", 1.0)], reduce=lambda t: t * torch.tensor([3.0, 1.0]))
    assert doubled == [1.0 - 3.0]  # the "other processes" tripled the reward sum


def _turn(role, valid=True, seat="learner", ids=(5,)):
    return Turn(role, seat, (Message("user", "x"),), "[1]", "1", valid, None, ids, (-0.1,), (1, 2))


def test_episode_samples_discount_from_the_end_per_role_and_skip_other_seats():
    ep = Episode(
        game="g",
        seed=0,
        seats={"a": "learner", "b": "scripted:random"},
        turns=(_turn("a"), _turn("b", seat="scripted:random", ids=()), _turn("a"), _turn("a")),
        outcome={"a": 1.0, "b": -1.0},
    )
    samples = episode_samples([ep], [{"a": 1.0, "b": -1.0}], "learner", gamma=0.5)
    assert [s.reward for s in samples] == [0.25, 0.5, 1.0]
    assert all(s.role == "a" for s in samples)
    assert episode_samples([ep], [{"a": None, "b": -1.0}], "learner") == []
    assert {s.opponent for s in samples} == {"scripted:random"}


def test_policy_gradient_loss_matches_the_formula():
    logp = torch.tensor([[-1.0, -2.0], [-0.5, 0.0]], requires_grad=True)
    current = Scored(logp=logp, entropy=torch.ones(2, 2), mask=torch.tensor([[1, 1], [1, 0]]))
    old = torch.tensor([[-1.0, -2.5], [-0.5, 0.0]])
    adv = torch.tensor([1.0, -2.0])
    terms = policy_gradient_loss(current, old, adv, torch.ones(2), clip=0.2, entropy_coef=0.1)
    ratio = math.exp(0.5)
    expected = (-1.0 + -min(ratio, 1.2) * 1.0 + 2.0) / 3 - 0.1
    assert terms.loss.item() == pytest.approx(expected, rel=1e-6)
    assert terms.clip_fraction == pytest.approx(1 / 3)
    terms.loss.backward()
    assert logp.grad[1, 1] == 0  # a padded token carries no gradient
    assert logp.grad[0, 1] == 0  # a clipped ratio with positive advantage carries none either


def test_k3_kl_is_zero_at_the_reference_and_positive_elsewhere():
    logp = torch.tensor([[-1.0]])
    current = Scored(logp=logp, entropy=torch.zeros(1, 1), mask=torch.ones(1, 1))
    zero = torch.zeros(1)
    same = policy_gradient_loss(current, logp, zero, torch.ones(1), ref_logp=logp, kl_coef=1.0)
    apart = policy_gradient_loss(current, logp, zero, torch.ones(1), ref_logp=logp - 1, kl_coef=1)
    assert same.kl == 0.0 and apart.kl == pytest.approx(math.exp(-1) + 1 - 1)


def test_score_equals_a_plain_forward_pass():
    from selfplay.core.models.tiny import build_tiny

    model, _ = build_tiny(seed=0)
    prompts, actions = [(1, 40, 41, 42), (1, 43)], [(50, 51, 2), (52,)]
    scored = score(model, prompts, actions, pad_id=0)
    for row, (p, a) in enumerate(zip(prompts, actions, strict=True)):
        ids = torch.tensor([list(p) + list(a)])
        logits = model(input_ids=ids).logits.log_softmax(-1)[0]
        for k, token in enumerate(a):
            expected = logits[len(p) - 1 + k, token]
            assert scored.logp[row, k].item() == pytest.approx(expected.item(), abs=1e-5)
    assert scored.mask.tolist() == [[True, True, True], [True, False, False]]
    ids, attention, starts = pack(prompts, actions, pad_id=0)
    assert starts.tolist() == [4, 2] and attention.sum().item() == 10


def test_rae_per_state_measures_a_move_against_its_position_leaving_its_own_return_out():
    def at(prompt: tuple[int, ...], reward: float, role: str = "a") -> Sample:
        return Sample("g", role, prompt, (3,), (-0.5,), reward, prompt)

    rae = RAE(decay=0.0, per_state=True, state_decay=0.5, state_prior=1.0)
    rae.bind("g", ["a", "b"])
    # role baseline 0.25; the lost position (1,) seen twice, the won position (2,) once
    out = rae([at((1,), -1.0), at((1,), 0.0), at((2,), 1.0), at((2,), 0.0, "b")])
    assert rae.baselines["g/a"] == 0.0
    # (1,): the other visit's return plus one visit's worth of the role's baseline, over 2
    assert out[0] == pytest.approx(-1.0 - (0.0 + 0.0) / 2)
    assert out[1] == pytest.approx(0.0 - (-1.0 + 0.0) / 2)
    assert out[2] == pytest.approx(1.0 - 0.0)  # seen once: the role's baseline, as plain RAE
    assert out[3] == 0.0
    # the next batch sees the decayed record of (1,): sum -0.5, count 1
    again = rae([at((1,), 1.0), at((3,), 1.0)])
    assert rae.baselines["g/a"] == 1.0
    assert again[0] == pytest.approx(1.0 - (-0.5 + 1.0) / (1 + 1))
    assert again[1] == pytest.approx(0.0)
    copy = RAE(decay=0.0, per_state=True, state_decay=0.5)
    copy.bind("g", ["a", "b"])
    copy.load_state_dict(rae.state_dict())
    assert copy([at((1,), 1.0)]) == rae([at((1,), 1.0)])  # the table travels in the checkpoint
