"""``pg``: token-level clipped policy gradient with a KL pull toward a reference and an entropy
bonus; the default objective.

The loss over the action tokens t of every sample i in a minibatch (prompt tokens carry none):

    ratio_t = exp(logp_t - logp_old_t)
    pg_t    = -min(ratio_t * A_i, clip(ratio_t, 1 - eps, 1 + eps) * A_i)   PPO (Schulman 2017)
    kl_t    = exp(ref_t - logp_t) - (ref_t - logp_t) - 1                   k3 (Schulman 2020)
    loss    = mean_t [ w_i * pg_t + beta * kl_t - c * H_t ]

With one update epoch the old log-probabilities are the current ones (detached): the ratio is
exactly 1 and the loss is REINFORCE with the estimator's baseline.

Served rollouts (``rollout.workers`` / ``servers``): the tokens were sampled by another copy of
the weights (another kernel, or an older version under overlap), so with one epoch each
token's term is weighted by the truncated importance weight

    w_t = min(exp(logp_old_t - logp_served_t), C)             C = rollout.importance_cap

the correction of Yao et al. 2025 ("Your Efficient RL Framework Secretly Brings You
Off-Policy RL Training"), which truncates the weight as IMPALA's V-trace does (Espeholt et al.
2018). A token the server did not sample (a search target) has w = 1. With several epochs the
PPO ratio is already taken against the sampled log-probabilities. ``w_i`` is the per-role
weight of the sample (the per-role learning-rate scale; under Adam a loss weight changes the
step size only approximately, which is why it is named a scale and documented as such).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from selfplay.api.estimator import Sample
from selfplay.api.objective import (
    Clip,
    EntropyCoef,
    IterationData,
    KLCoef,
    Loss,
    Objective,
    RoleLRScale,
    Scored,
    UpdateEpochs,
)
from selfplay.api.options import Options


@dataclass(frozen=True)
class LossTerms:
    loss: torch.Tensor
    policy: float
    kl: float
    entropy: float
    clip_fraction: float


def policy_gradient_loss(
    current: Scored,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    *,
    clip: float = 0.2,
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    entropy_coef: float = 0.0,
    importance: torch.Tensor | None = None,
) -> LossTerms:
    mask = current.mask.float()
    tokens = mask.sum().clamp_min(1.0)
    ratio = torch.exp(current.logp - old_logp)
    adv = advantages[:, None]
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip, 1 + clip) * adv
    policy = -torch.minimum(unclipped, clipped) * weights[:, None]
    if importance is not None:  # served tokens: the truncated importance weight (module doc)
        policy = policy * importance
    per_token = policy
    if entropy_coef:  # at 0 the entropy is a metric only: no gradient is taken through it
        per_token = per_token - entropy_coef * current.entropy
    kl = torch.zeros_like(policy)
    if ref_logp is not None and kl_coef > 0:
        log_ratio = ref_logp - current.logp
        kl = torch.exp(log_ratio) - log_ratio - 1
        per_token = per_token + kl_coef * kl
    loss = (per_token * mask).sum() / tokens
    with torch.no_grad():
        clipped_tokens = ((ratio - 1).abs() > clip).float()
        sums = [(term * mask).sum() for term in (policy, kl, current.entropy, clipped_tokens)]
        means = (torch.stack(sums) / tokens).tolist()  # one read from the device, not four
        return LossTerms(loss, *means)


@dataclass(frozen=True)
class Advantaged:
    """One minibatch item of the policy gradient: a sample and its advantage."""

    samples: tuple[Sample, ...]
    advantage: float


class PGOptions(Options):
    """pg's settings (``objective_options.*``; the old ``train.*`` names are mapped)."""

    update_epochs: UpdateEpochs = 1
    clip: Clip = 0.2
    kl_coef: KLCoef = 0.05
    entropy_coef: EntropyCoef = 0.0
    role_lr_scale: RoleLRScale = {}  # noqa: RUF012 (pydantic copies it per instance)


class PolicyGradient(Objective):
    """Clipped policy gradient (PPO-clip; REINFORCE with one epoch) + k3 KL + entropy bonus."""

    name = "pg"
    Options = PGOptions
    needs = "advantages"
    metric_names = ("policy", "kl", "entropy", "clip_fraction")

    def prepare(self, data: IterationData) -> list[Advantaged]:
        """Every sample the estimator kept (a None advantage drops it)."""
        advantages = data.advantages or [None] * len(data.samples)
        return [
            Advantaged((sample,), advantage)
            for sample, advantage in zip(data.samples, advantages, strict=True)
            if advantage is not None
        ]

    def wants_reference(self) -> bool:
        return self.train.kl_coef > 0

    def wants_entropy(self) -> bool:
        return True  # logged as a metric even when its coefficient is 0

    def loss(self, items: Sequence[Any], current: Scored, reference: Scored | None) -> Loss:
        samples = [item.samples[0] for item in items]
        device = current.logp.device
        importance = None
        if self.train.update_epochs == 1:  # the rollout policy is the current one: ratio 1
            old = current.logp.detach()
            cap = self.train.importance_cap
            if cap is not None:
                served = _padded([s.logprobs for s in samples], old)
                importance = torch.exp(old - served).clamp(max=cap)
        else:
            old = _padded([s.logprobs for s in samples], current.logp.detach())
        scale = self.train.role_lr_scale
        terms = policy_gradient_loss(
            current,
            old,
            torch.tensor([item.advantage for item in items], dtype=torch.float32, device=device),
            torch.tensor(
                [scale.get(s.role, 1.0) for s in samples], dtype=torch.float32, device=device
            ),
            clip=self.train.clip,
            ref_logp=None if reference is None else reference.logp,
            kl_coef=self.train.kl_coef,
            entropy_coef=self.train.entropy_coef,
            importance=importance,
        )
        metrics = {name: getattr(terms, name) for name in self.metric_names}
        return Loss(terms.loss, metrics)


def _padded(rows: Sequence[Sequence[float]], current: torch.Tensor) -> torch.Tensor:
    """The rows' sampling log-probabilities; a row never sampled (a search target, with no
    log-probabilities) takes the current ones, a ratio of 1 in every epoch."""
    out = torch.zeros(current.shape)
    for i, row in enumerate(rows):
        if row:
            out[i, : len(row)] = torch.tensor(row, dtype=torch.float32)
        else:
            out[i] = current[i].cpu()
    return out.to(current.device)
