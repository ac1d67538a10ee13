"""Scoring several short answers after one prompt, reading the prompt once.

A policy table scores every legal answer at every information set: Leduc poker has 936 of
them, each a prompt of about 180 tokens followed by one of two or three answers of two or
three tokens. `score` (core/models/scoring.py) packs each (prompt, answer) pair into a row of
its own, so every prompt runs through the model once per answer. Here each prompt runs once:
the prompts of a chunk are left-padded into one batch and run with the key-value cache on,
the logits at their last position give each answer's first token, and the cache, its rows
repeated once per answer, is the context for the rest of the answers' tokens, run as a second,
short batch. Position ids are counted from each row's first real token, so left padding moves
nothing; the values agree with `score`'s to float rounding (tests/test_prefix_scoring.py).

Inference only, for models whose forward takes ``position_ids``, a `DynamicCache` and
``logits_to_keep`` (Hugging Face causal LMs, as `HFPolicy`'s generation needs).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from transformers import DynamicCache

from selfplay.core.models.kv_cache import cache_kwarg, left_pad
from selfplay.core.models.scoring import answer_logprobs

#: Prompt tokens per chunk: the cache of a chunk, repeated once per answer, is what it holds
#: (about 16 MB for the tiny model, 0.6 GB for SmolLM2-135M at three answers a prompt).
TOKENS_PER_CHUNK = 4096


@torch.inference_mode()
def score_menus(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    answers: Sequence[Sequence[Sequence[int]]],
    pad_id: int,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Per-token log-probabilities of each prompt's answers: one row per (prompt, answer) in
    order, zero past each answer's end (the second value of `score_answers`'s contract)."""
    width = max(len(a) for menu in answers for a in menu)
    parts = []
    for chunk in _chunks([len(p) for p in prompts], TOKENS_PER_CHUNK):
        mine = [prompts[i] for i in chunk], [answers[i] for i in chunk]
        parts.append(_score_chunk(model, *mine, pad_id, temperature, width))
    return torch.cat(parts).cpu()


def _chunks(lengths: Sequence[int], budget: int) -> Iterator[list[int]]:
    chunk: list[int] = []
    longest = 0
    for i, n in enumerate(lengths):
        if chunk and max(longest, n) * (len(chunk) + 1) > budget:
            yield chunk
            chunk, longest = [], 0
        chunk.append(i)
        longest = max(longest, n)
    if chunk:
        yield chunk


def _score_chunk(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    answers: Sequence[Sequence[Sequence[int]]],
    pad_id: int,
    temperature: float,
    width: int,
) -> torch.Tensor:
    device = next(model.parameters()).device
    ids, mask = left_pad(prompts, pad_id, device)
    lengths = mask.sum(-1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache(config=_config(model))
    kwarg = cache_kwarg(model)
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        use_cache=True,
        logits_to_keep=1,
        **{kwarg: cache},
    )
    rows = [a for menu in answers for a in menu]
    owner = torch.tensor([i for i, menu in enumerate(answers) for _ in menu], device=device)
    firsts = torch.tensor([a[0] for a in rows], device=device)
    logp = torch.zeros(len(rows), width, device=device)
    logp[:, 0], _ = answer_logprobs(out.logits[owner, -1], firsts, temperature, False)
    rest = max(len(a) for a in rows) - 1
    if rest == 0:
        return logp
    cache.batch_select_indices(owner)  # each prompt's cache, once per answer
    # feed each answer's tokens but its last; their logits predict tokens 1 .. end
    fed = torch.tensor([[*a[:-1], *[pad_id] * (rest - len(a) + 1)] for a in rows], device=device)
    targets = torch.tensor([[*a[1:], *[pad_id] * (rest - len(a) + 1)] for a in rows], device=device)
    counts = torch.tensor([len(a) - 1 for a in rows], device=device)
    steps = torch.arange(rest, device=device)
    fed_mask = (steps[None, :] < counts[:, None]).long()
    out = model(
        input_ids=fed,
        attention_mask=torch.cat([mask[owner], fed_mask], dim=1),
        position_ids=lengths[owner][:, None] + steps[None, :],
        use_cache=True,
        **{kwarg: cache},
    )
    later, _ = answer_logprobs(out.logits, targets, temperature, False)
    logp[:, 1 : rest + 1] = later.float() * fed_mask
    return logp


def _config(model: torch.nn.Module):
    """The causal LM's config, through peft's and Fabric's wrappers."""
    for _ in range(4):
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        if hasattr(base, "config"):
            return base.config
        model = getattr(model, "module", model)
    return None
