"""Token-level clipped policy gradient with a KL pull toward a reference and an entropy bonus.

The loss over the action tokens t of every sample i in a minibatch (prompt tokens carry none):

    ratio_t = exp(logp_t - logp_old_t)
    pg_t    = -min(ratio_t * A_i, clip(ratio_t, 1 - eps, 1 + eps) * A_i)   PPO (Schulman 2017)
    kl_t    = exp(ref_t - logp_t) - (ref_t - logp_t) - 1                   k3 (Schulman 2020)
    loss    = mean_t [ w_i * pg_t + beta * kl_t - c * H_t ]

With one update epoch the old log-probabilities are the current ones (detached): the ratio is
exactly 1 and the loss is REINFORCE with the estimator's baseline. ``w_i`` is the per-role
weight of the sample (the per-role learning-rate scale; under Adam a loss weight changes the
step size only approximately, which is why it is named a scale and documented as such).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Scored:
    """Per-token quantities for a minibatch, shaped [batch, action tokens]."""

    logp: torch.Tensor
    entropy: torch.Tensor
    mask: torch.Tensor


def pack(
    prompts: Sequence[Sequence[int]], actions: Sequence[Sequence[int]], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ``prompt + action`` rows, their attention mask, and each prompt's length."""
    rows = [list(p) + list(a) for p, a in zip(prompts, actions, strict=True)]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        attention[i, : len(row)] = 1
    return ids, attention, torch.tensor([len(p) for p in prompts])


def score(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    actions: Sequence[Sequence[int]],
    pad_id: int,
    temperature: float = 1.0,
    with_entropy: bool = True,
) -> Scored:
    """Log-probabilities (and entropies) of each action token given its prompt."""
    device = next(model.parameters()).device
    ids, attention, starts = (t.to(device) for t in pack(prompts, actions, pad_id))
    width = max(len(a) for a in actions)
    logits = model(input_ids=ids, attention_mask=attention).logits.float() / temperature
    # the logit at position j predicts token j + 1: action token k sits at start + k
    offsets = torch.arange(width, device=device)
    positions = (starts[:, None] - 1 + offsets[None, :]).clamp(max=ids.shape[1] - 2)
    lengths = torch.tensor([len(a) for a in actions], device=device)
    mask = offsets[None, :] < lengths[:, None]
    rows = torch.arange(len(prompts), device=device)[:, None]
    chosen_logits = logits[rows, positions]  # [B, T, vocab]
    targets = ids[rows, positions + 1]
    logprobs = F.log_softmax(chosen_logits, dim=-1)
    logp = logprobs.gather(-1, targets[..., None]).squeeze(-1)
    entropy = -(logprobs.exp() * logprobs).sum(-1) if with_entropy else torch.zeros_like(logp)
    return Scored(logp=logp, entropy=entropy, mask=mask)


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
) -> LossTerms:
    mask = current.mask.float()
    tokens = mask.sum().clamp_min(1.0)
    ratio = torch.exp(current.logp - old_logp)
    adv = advantages[:, None]
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip, 1 + clip) * adv
    policy = -torch.minimum(unclipped, clipped) * weights[:, None]
    per_token = policy - entropy_coef * current.entropy
    kl = torch.zeros_like(policy)
    if ref_logp is not None and kl_coef > 0:
        log_ratio = ref_logp - current.logp
        kl = torch.exp(log_ratio) - log_ratio - 1
        per_token = per_token + kl_coef * kl
    loss = (per_token * mask).sum() / tokens
    with torch.no_grad():
        clipped_tokens = ((ratio - 1).abs() > clip).float()
        return LossTerms(
            loss=loss,
            policy=((policy * mask).sum() / tokens).item(),
            kl=((kl * mask).sum() / tokens).item(),
            entropy=((current.entropy * mask).sum() / tokens).item(),
            clip_fraction=((clipped_tokens * mask).sum() / tokens).item(),
        )
