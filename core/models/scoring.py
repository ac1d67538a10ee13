"""Scoring answers under a model: the log-probability (and entropy) of each answer token.

Every objective, the KL reference and the policy table read a model through `score`: the
prompt and the answer are packed into one right-padded row, one forward pass runs, and the
logits that predict the answer tokens are gathered, so nothing is sampled and nothing is
generated.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from selfplay.api.objective import Scored


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
