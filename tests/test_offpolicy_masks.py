"""The corrections the field defaults to now: TRL's masked importance sampling and
DeepSeek-V3.2's off-policy sequence masking, on hand-made log-probabilities."""

from __future__ import annotations

import torch

from selfplay.api.estimator import Sample, Sampling
from selfplay.api.objective import IterationData, Scored
from selfplay.core.algorithms.pg import PolicyGradient


def grad(objective, behaviour, current, advantage=1.0, cap=2.0):
    """d loss / d logp_t of one sample whose trainer log-probabilities are ``current``."""
    tokens = tuple(range(3, 3 + len(behaviour)))
    served = Sampling(importance_cap=cap)
    sample = Sample("g", "r", (1, 2), tokens, tuple(behaviour), 1.0, (1, 2), sampling=served)
    items = objective.prepare(IterationData([sample], [advantage]))
    logp = torch.tensor([current], requires_grad=True)
    scored = Scored(logp, torch.zeros_like(logp), torch.ones_like(logp))
    objective.loss(items, scored, None).loss.backward()
    return logp.grad[0] * len(current)  # the loss is a mean over tokens


def test_masked_is_leaves_out_the_tokens_truncated_is_caps():
    behaviour, current = [-1.0, -1.0, -1.0], [-1.0 + 0.5, -1.0 - 0.5, -1.0 + 3.0]
    masked = grad(PolicyGradient(correction="masked-is"), behaviour, current)
    truncated = grad(PolicyGradient(correction="truncated-is"), behaviour, current)
    weights = torch.tensor([0.5, -0.5]).exp()
    assert torch.allclose(masked, torch.cat([-weights, torch.zeros(1)]), atol=1e-6)
    assert torch.allclose(truncated[:2], masked[:2]) and truncated[2] == -2.0


def test_masked_is_at_the_sequence_level_drops_the_whole_answer():
    behaviour = [-1.0, -1.0, -1.0]
    kept = grad(PolicyGradient(correction="masked-is", level="sequence"), behaviour, [-0.9] * 3)
    dropped = grad(PolicyGradient(correction="masked-is", level="sequence"), behaviour, [-0.7] * 3)
    assert torch.allclose(kept, torch.full((3,), -float(torch.tensor(0.3).exp())), atol=1e-6)
    assert torch.equal(dropped, torch.zeros(3))  # exp(0.9) > 2: TRL's sequence_mask


def test_the_off_policy_mask_drops_a_bad_answer_the_policy_left_behind():
    behaviour, drifted = [-1.0, -1.0], [-1.8, -1.6]  # 0.7 nats a token less likely now
    masked = PolicyGradient(correction="truncated-is", off_policy_mask=0.5)
    assert torch.equal(grad(masked, behaviour, drifted, advantage=-1.0), torch.zeros(2))
    # a good answer, or a bad one still near the sampler, keeps its gradient
    assert grad(masked, behaviour, drifted, advantage=1.0).abs().sum() > 0
    near = [-1.2, -1.3]
    assert grad(masked, behaviour, near, advantage=-1.0).abs().sum() > 0
    plain = PolicyGradient(correction="truncated-is")
    assert torch.allclose(grad(plain, behaviour, near, -1.0), grad(masked, behaviour, near, -1.0))
