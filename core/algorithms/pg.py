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
the weights (another kernel, or an older version under overlap: ``Sample.staleness``), with
log-probabilities logp_b. ``correction`` (``objective_options``) says how the loss corrects
for that, at the level of each token or of each sample's whole answer (``level``), with the
cap C (``importance_cap``; unset: ``rollout.importance_cap``, else 2.0 when served):

- ``truncated-is``: with one update epoch each term is weighted by
  the truncated importance weight w = min(exp(logp_old - logp_b), C) (Yao et al. 2025, "Your
  Efficient RL Framework Secretly Brings You Off-Policy RL Training"; IMPALA's V-trace
  truncation, Espeholt et al. 2018); at the sequence level w = min(exp(sum_t (logp_old -
  logp_b)), C) for every token of the answer. With several epochs PPO's ratio is taken against
  logp_b instead, as before.
- ``ppo-clip``: the PPO ratio is taken against the sampling policy in every epoch, ratio_t =
  exp(logp_t - logp_b_t), clipped to [1 - eps, 1 + eps] (the stable loss of tinker-cookbook's
  off-policy study), and a negative advantage's term is bounded by C * |A| (dual clip, Ye et al.
  2020). At the sequence level the ratio is GSPO's exp(mean_t (logp_t - logp_b_t)) (Zheng et al.
  2025), shared by the answer's tokens.
- ``decoupled``: AReaL's decoupled PPO (Fu et al. 2025). A proximal policy stands between the
  two: logp_prox, the trainer's own log-probabilities when the sample is first trained (its
  weights then, detached). The PPO ratio is taken against it, ratio = exp(logp - logp_prox),
  and the term is weighted by the behaviour weight w = exp(logp_prox - logp_b), with tokens
  (or, at the sequence level, answers) whose w exceeds C left out of the loss (AReaL's
  ``behav_imp_weight_cap``: masked, not truncated).

- ``masked-is``: TRL's GRPO default. The truncated-is weight w, but a token (or, at the
  sequence level, an answer: ``level=sequence`` is TRL's ``sequence_mask``) whose w exceeds C
  is left out of the loss instead of truncated (one update epoch; several: as truncated-is).

``off_policy_mask`` (δ) adds DeepSeek-V3.2's off-policy sequence masking on top of any of them:
an answer with a negative advantage whose tokens the trainer now finds, on average, more than
δ nats less likely than the sampler did, mean_t (logp_b - logp_t) > δ, is left out of the loss
(a bad answer the policy has already moved away from teaches only noise).

A token the server did not sample (a search target) has logp_b = logp_old: w = 1, ratio 1.
Under ``rollout.stale: reweight`` a sample older than the cap has its loss scaled by its
age weight (`Sampling.age_weight`: ``rollout.age_decay`` per sync past it). ``w_i`` is the per-role
weight of the sample (the per-role learning-rate scale; under Adam a loss weight changes the
step size only approximately, which is why it is named a scale and documented as such).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from pydantic import Field

from selfplay.api.estimator import Sample, Sampling
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

#: The correction a served run uses when it trains samples of older weights
#: (``rollout.max_staleness`` > 0) and ``correction`` is not set (in turn: truncated-is):
#: measured on the default tic-tac-toe run (benchmarks/RESULTS.md, "Off-policy corrections").
STALE_DEFAULT = "decoupled"


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
    ratio: torch.Tensor | None = None,
    floor: float | None = None,
) -> LossTerms:
    """``ratio`` (default exp(logp - old_logp)) is PPO's; ``importance`` weights each term
    without a gradient; ``floor`` bounds a negative advantage's term at floor * |A|."""
    mask = current.mask.float()
    tokens = mask.sum().clamp_min(1.0)
    if ratio is None:
        ratio = torch.exp(current.logp - old_logp)
    adv = advantages[:, None]
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip, 1 + clip) * adv
    policy = -torch.minimum(unclipped, clipped)
    if floor is not None:  # dual clip: -A * C bounds the term of a negative advantage
        policy = torch.where(adv < 0, torch.minimum(policy, -floor * adv), policy)
    policy = policy * weights[:, None]
    if importance is not None:  # served tokens: the correction's weight (module doc)
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
    correction: Literal["truncated-is", "masked-is", "ppo-clip", "decoupled"] | None = Field(
        default=None,
        description="How served tokens of another copy or an older version of the weights are "
        "corrected: truncated-is (a truncated importance weight), masked-is (the weight, with "
        "tokens over the cap left out: TRL's default), ppo-clip (PPO's ratio to the sampling "
        "policy, clipped), decoupled (AReaL's proximal policy). Unset: "
        f"{STALE_DEFAULT} with rollout.max_staleness > 0 (measured best), else truncated-is.",
    )
    off_policy_mask: float | None = Field(
        default=None,
        gt=0,
        description="Served rollouts: leave out an answer with a negative advantage whose "
        "tokens are on average this many nats less likely now than when sampled "
        "(DeepSeek-V3.2's off-policy sequence masking; 0.5 is a start). Unset: none.",
    )
    level: Literal["token", "sequence"] = Field(
        default="token",
        description="Weights and ratios per token, or one per answer (sequence: the "
        "answer's summed log-ratio for the weights, GSPO's mean log-ratio for the ratio).",
    )
    importance_cap: float | None = Field(
        default=None,
        gt=0,
        description="The cap C: truncated-is truncates its weight at C, ppo-clip bounds a "
        "negative advantage's term at C|A|, decoupled leaves out tokens whose behaviour "
        "weight exceeds C (unset: rollout.importance_cap, else 2.0 when served).",
    )


class PolicyGradient(Objective):
    """Clipped policy gradient (PPO-clip; REINFORCE with one epoch) + k3 KL + entropy bonus."""

    name = "pg"
    Options = PGOptions
    needs = "advantages"
    metric_names = ("policy", "kl", "entropy", "clip_fraction")
    stale = "corrects"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._proximal: dict[int, torch.Tensor] = {}  # decoupled: id(item) -> logp_prox

    def correction(self, sampling: Sampling) -> str:
        """The correction of samples sampled as ``sampling`` says (the option, else the
        default for samples that may trail the weights, else truncated-is)."""
        if self.options.correction:
            return self.options.correction
        return STALE_DEFAULT if sampling.max_staleness else "truncated-is"

    def stale_options(self) -> dict[str, Any]:
        return {} if self.options.correction else {"correction": STALE_DEFAULT}

    def prepare(self, data: IterationData) -> list[Advantaged]:
        """Every sample the estimator kept (a None advantage drops it)."""
        self._proximal = {}
        advantages = data.advantages or [None] * len(data.samples)
        return [
            Advantaged((sample,), advantage)
            for sample, advantage in zip(data.samples, advantages, strict=True)
            if advantage is not None
        ]

    def wants_reference(self) -> bool:
        return self.options.kl_coef > 0

    def wants_entropy(self) -> bool:
        return True  # logged as a metric even when its coefficient is 0

    def loss(self, items: Sequence[Any], current: Scored, reference: Scored | None) -> Loss:
        samples = [item.samples[0] for item in items]
        options, sampling = self.options, samples[0].sampling  # a learner's samples share it
        device = current.logp.device
        cap = options.importance_cap or sampling.importance_cap
        served = cap is not None  # the tokens were sampled elsewhere: correct for it
        correction = self.correction(sampling)
        now = current.logp.detach()
        behaviour = _padded([s.logprobs for s in samples], now)
        importance = ratio = floor = None
        old = now if options.update_epochs == 1 else behaviour
        one_epoch = options.update_epochs == 1
        if served and correction in ("truncated-is", "masked-is") and one_epoch:
            importance = _weights(now - behaviour, current.mask, options.level)
            over = importance > cap
            importance = importance.masked_fill(over, 0.0 if correction == "masked-is" else cap)
        elif served and correction == "ppo-clip":
            old, floor = behaviour, cap
            ratio = _ratio(current.logp - behaviour, current.mask, options.level)
        elif served and correction == "decoupled":
            old = self._proximal_logp(items, now)
            ratio = _ratio(current.logp - old, current.mask, options.level)
            behaviour_weight = _weights(old - behaviour, current.mask, options.level)
            importance = torch.where(behaviour_weight > cap, 0.0, behaviour_weight)
        advantages = torch.tensor([i.advantage for i in items], dtype=torch.float32, device=device)
        if served and self.options.off_policy_mask is not None:
            kept = _on_policy(
                behaviour - now, current.mask, advantages, self.options.off_policy_mask
            )
            importance = kept if importance is None else importance * kept
        scale = options.role_lr_scale
        weights = [scale.get(s.role, 1.0) * s.sampling.age_weight(s.staleness) for s in samples]
        terms = policy_gradient_loss(
            current,
            old,
            advantages,
            torch.tensor(weights, dtype=torch.float32, device=device),
            clip=options.clip,
            ref_logp=None if reference is None else reference.logp,
            kl_coef=options.kl_coef,
            entropy_coef=options.entropy_coef,
            importance=importance,
            ratio=ratio,
            floor=floor,
        )
        metrics = {name: getattr(terms, name) for name in self.metric_names}
        return Loss(terms.loss, metrics)

    def _proximal_logp(self, items: Sequence[Any], now: torch.Tensor) -> torch.Tensor:
        """Each item's log-probabilities when it was first trained this iteration."""
        rows = []
        for i, item in enumerate(items):
            kept = self._proximal.setdefault(id(item), now[i].clone())
            rows.append(kept if kept.shape == now[i].shape else now[i])
        return torch.stack(rows)


def _on_policy(
    drift: torch.Tensor, mask: torch.Tensor, advantages: torch.Tensor, delta: float
) -> torch.Tensor:
    """1 for each token of an answer kept, 0 for one the off-policy mask leaves out: a
    negative advantage and a mean ``drift`` (logp_b - logp, per token) over ``delta``."""
    mean = (drift * mask).sum(-1) / mask.sum(-1).clamp_min(1)
    left_out = (advantages < 0) & (mean > delta)
    return (~left_out).float()[:, None].expand_as(drift)


def _weights(log_ratio: torch.Tensor, mask: torch.Tensor, level: str) -> torch.Tensor:
    """exp(log_ratio) per token, or exp of each row's summed log-ratio for all its tokens."""
    if level == "token":
        return torch.exp(log_ratio)
    total = (log_ratio * mask).sum(-1, keepdim=True)
    return torch.exp(total.clamp(max=50.0)).expand_as(log_ratio)


def _ratio(log_ratio: torch.Tensor, mask: torch.Tensor, level: str) -> torch.Tensor:
    """PPO's ratio per token, or GSPO's exp(mean log-ratio) per row (with its gradient)."""
    if level == "token":
        return torch.exp(log_ratio)
    mean = (log_ratio * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp_min(1)
    return torch.exp(mean).expand_as(log_ratio)


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
