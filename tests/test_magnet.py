"""legal-pg's KL magnet: the reference's choice, the uniform choice over the menu, or a mix.

A pretrained model's reference is nearly deterministic over a menu (SmolLM2 checks with 0.995
at Kuhn poker whatever its card), so a pull toward it keeps the policy pure; the uniform magnet
is magnetic mirror descent's for a quantal response equilibrium, which stays mixed."""

from __future__ import annotations

import math

import pytest
import torch

from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData, Scored
from selfplay.core.algorithms.legal_pg import LegalPolicyGradient


def kl_loss(share: float, totals: list[float], reference: list[float] | None, direction="forward"):
    """(loss, the gradient on the answers' logits, metrics) of a decision with advantage 0:
    the KL term alone, at kl_coef 1."""
    objective = LegalPolicyGradient(kl_coef=1.0, uniform_magnet=share, kl_direction=direction)
    sample = Sample("g", "r", (1, 2), (ord("a"), 0), (), 1.0, (1, 2), menu=("a", "b", "c"))
    data = IterationData([sample], [0.0], encode=lambda t: (ord(t), 0))
    y = torch.tensor(totals, requires_grad=True)
    current = Scored(torch.stack([torch.zeros(3), y], 1), torch.zeros(3, 2), torch.ones(3, 2))
    ref = None
    if reference is not None:
        r = torch.tensor(reference)
        ref = Scored(torch.stack([torch.zeros(3), r], 1), torch.zeros(3, 2), torch.ones(3, 2))
    out = objective.loss(objective.prepare(data), current, ref)
    out.loss.backward()
    return out.loss.item(), y.grad, out.metrics, objective


def test_the_uniform_magnet_is_log_n_less_the_entropy_and_needs_no_reference():
    totals = [0.0, -1.0, -3.0]
    loss, grad, metrics, objective = kl_loss(1.0, totals, None)
    q = torch.softmax(torch.tensor(totals), 0)
    entropy = float(-(q * q.log()).sum())
    assert loss == pytest.approx(math.log(3) - entropy, rel=1e-5)
    assert metrics["kl"] == pytest.approx(loss, rel=1e-5)
    assert not objective.wants_reference()
    assert grad[0] > 0 and grad[2] < 0  # the likeliest answer is pushed down, the rarest up


def test_a_mixed_magnet_is_the_mixture_of_the_two_choices():
    totals, reference = [0.0, -1.0, -3.0], [0.0, -6.0, -6.0]
    loss, _, _, objective = kl_loss(0.5, totals, reference)
    q = torch.softmax(torch.tensor(totals), 0)
    magnet = 0.5 * torch.softmax(torch.tensor(reference), 0) + 0.5 / 3
    assert loss == pytest.approx(float((q * (q.log() - magnet.log())).sum()), rel=1e-5)
    assert objective.wants_reference()
    pure, _, _, _ = kl_loss(0.0, totals, reference)
    ref_q = torch.softmax(torch.tensor(reference), 0)
    assert pure == pytest.approx(float((q * (q.log() - ref_q.log())).sum()), rel=1e-5)


def test_the_reverse_direction_keeps_pulling_a_pure_choice_back():
    pure = [0.0, -12.0, -12.0]  # q(a) = 0.99999
    _, forward, _, _ = kl_loss(1.0, pure, None)
    loss, reverse, _, _ = kl_loss(1.0, pure, None, "reverse")
    q = torch.softmax(torch.tensor(pure), 0)
    assert loss == pytest.approx(
        float((torch.full((3,), 1 / 3) * (math.log(1 / 3) - q.log())).sum())
    )
    assert torch.allclose(reverse, q - 1 / 3, atol=1e-6)  # d KL(u || q) / dy = q - u
    assert forward.abs().max() < 1e-3 < reverse.abs().max()  # the forward pull has faded
