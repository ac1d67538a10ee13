"""Scoring answers under a model: the log-probability (and entropy) of each answer token.

Every objective, the KL reference and the policy table read a model through `score`: the
prompt and the answer are packed into one right-padded row, one forward pass runs, and the
logits that predict the answer tokens are gathered, so nothing is sampled and nothing is
generated.

Memory. A full-vocabulary logit for every prompt position is most of what a forward pass
would hold (49k floats a position for SmolLM2, against 576 for its hidden state), and only
the answer positions are read. So the hidden states are cut down to the answer positions
before the model's output layer (a forward pre-hook on ``get_output_embeddings()``, which
works through LoRA, DDP and Fabric's wrappers), and the log-softmax runs over chunks of rows
and is recomputed chunk by chunk in the backward pass (`answer_logprobs`): what a forward
keeps for the gradient is the answer logits, once, and the backward pass writes their gradient
over them (they are the model's output, which nothing else reads), so they are never held
twice: 123 MB less at the peak of a pass of 77 rows of 8 answer tokens over a 50k vocabulary.
The ops per row are the ones a plain ``log_softmax`` would run, so values and gradients are
those of the unchunked computation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

from selfplay.api.objective import Scored

#: Logits per chunk of the log-softmax (16 MB of float32): a few hundred answer positions of
#: a 49k vocabulary, every position of a small one.
CHUNK_ELEMENTS = 1 << 22


def pack(
    prompts: Sequence[Sequence[int]], actions: Sequence[Sequence[int]], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ``prompt + action`` rows, their attention mask, and each prompt's length."""
    rows = [[*p, *a] for p, a in zip(prompts, actions, strict=True)]
    lengths = torch.tensor([len(r) for r in rows])
    width = int(lengths.max())
    # one tensor from padded lists: a copy per row would cost more than the rows themselves
    ids = torch.tensor([r + [pad_id] * (width - len(r)) for r in rows], dtype=torch.long)
    attention = (torch.arange(width)[None, :] < lengths[:, None]).long()
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
    lengths = [len(a) for a in actions]
    return score_packed(model, ids, starts, lengths, temperature, with_entropy, attention)


def score_packed(
    model: torch.nn.Module,
    ids: torch.Tensor,
    starts: torch.Tensor,
    lengths: Sequence[int],
    temperature: float,
    with_entropy: bool,
    attention_mask: torch.Tensor,
    **inputs: Any,
) -> Scored:
    """`score` of packed rows: ``ids[r]`` holds row r's answer from ``starts[r]`` on, its
    ``lengths[r]`` tokens. ``inputs`` go to the model too (a cache of what precedes every
    row, with ``attention_mask`` covering it, and the rows' position ids:
    core/models/prefix_scoring.py)."""
    device = ids.device
    width = max(lengths)
    # the logit at position j predicts token j + 1: action token k sits at start + k
    offsets = torch.arange(width, device=device)
    positions = (starts[:, None] - 1 + offsets[None, :]).clamp(max=ids.shape[1] - 2)
    mask = offsets[None, :] < torch.tensor(lengths, device=device)[:, None]
    rows = torch.arange(ids.shape[0], device=device)[:, None]
    with answer_positions(model, rows, positions) as sliced:
        logits = model(input_ids=ids, attention_mask=attention_mask, **inputs).logits
    if not sliced:  # a model without an output layer to hook: cut its full logits
        logits = logits[rows, positions]
    targets = ids[rows, positions + 1]
    logp, entropy = answer_logprobs(logits, targets, temperature, with_entropy, given=True)
    return Scored(logp=logp, entropy=entropy, mask=mask)


@contextmanager
def answer_positions(
    model: torch.nn.Module, rows: torch.Tensor, positions: torch.Tensor
) -> Iterator[bool]:
    """Inside the block the model's output layer sees only ``hidden[rows, positions]``.

    Yields whether it could (False for a model with no ``get_output_embeddings``).
    """
    layer = output_layer(model)
    if layer is None:
        yield False
        return

    def keep_answers(module: torch.nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        hidden = args[0]
        return (hidden[rows, positions], *args[1:])

    handle = layer.register_forward_pre_hook(keep_answers)
    try:
        yield True
    finally:
        handle.remove()


def output_layer(model: torch.nn.Module) -> torch.nn.Module | None:
    """The module that turns hidden states into logits, looked for through wrappers."""
    for _ in range(4):  # Fabric's wrapper, DDP, peft, the model
        get = getattr(model, "get_output_embeddings", None)
        layer = get() if callable(get) else None
        if isinstance(layer, torch.nn.Module):
            return layer
        model = getattr(model, "module", None)
        if not isinstance(model, torch.nn.Module):
            return None
    return None


def answer_logprobs(
    logits: torch.Tensor,
    targets: torch.Tensor,
    temperature: float,
    with_entropy: bool,
    given: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-probability of each target, entropy at each position) of ``[..., vocab]`` logits.

    In chunks of rows (`CHUNK_ELEMENTS`); with gradients, through `_ChunkedLogSoftmax`, which
    keeps only ``logits`` for the backward pass and recomputes the rest a chunk at a time.
    ``given``: the caller reads ``logits`` no more, so the backward pass writes their gradient
    over them rather than into a tensor of their size beside them.
    """
    shape = targets.shape
    flat, flat_targets = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    rows = max(1, CHUNK_ELEMENTS // max(flat.shape[-1], 1))
    if torch.is_grad_enabled() and flat.requires_grad:
        logp, entropy = _ChunkedLogSoftmax.apply(
            flat, flat_targets, temperature, with_entropy, rows, given
        )
    else:
        logp, entropy = _chunked(flat, flat_targets, temperature, with_entropy, rows)
    return logp.reshape(shape), entropy.reshape(shape)


def _terms(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    logits = logits if logits.dtype == torch.float64 else logits.float()
    logprobs = F.log_softmax(logits / temperature, dim=-1)
    logp = logprobs.gather(-1, targets[..., None]).squeeze(-1)
    entropy = -(logprobs.exp() * logprobs).sum(-1) if with_entropy else torch.zeros_like(logp)
    return logp, entropy


def _chunked(logits, targets, temperature, with_entropy, rows):
    parts = [
        _terms(chunk, target, temperature, with_entropy)
        for chunk, target in zip(logits.split(rows), targets.split(rows), strict=True)
    ]
    if not parts:
        empty = logits.new_zeros(0, dtype=torch.float32)
        return empty, empty
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


class _ChunkedLogSoftmax(torch.autograd.Function):
    """`_terms` over chunks of rows, recomputed per chunk in the backward pass; with ``given``,
    each chunk's gradient written over its logits, which that chunk's recomputation has read."""

    @staticmethod
    def forward(ctx, logits, targets, temperature, with_entropy, rows, given):
        ctx.save_for_backward(logits, targets)
        ctx.temperature, ctx.with_entropy, ctx.rows = temperature, with_entropy, rows
        ctx.given = given
        ctx.set_materialize_grads(False)  # an output the loss does not use gets None
        return _chunked(logits, targets, temperature, with_entropy, rows)

    @staticmethod
    def backward(ctx, grad_logp, grad_entropy):
        logits, targets = ctx.saved_tensors
        # an entropy logged but not in the loss (entropy_coef 0) is not differentiated
        pairs = [(0, grad_logp), (1, grad_entropy if ctx.with_entropy else None)]
        pairs = [(k, g) for k, g in pairs if g is not None]
        if not pairs:
            return None, None, None, None, None, None
        grad = logits if ctx.given else torch.empty_like(logits)
        for start in range(0, logits.shape[0], ctx.rows):
            end = start + ctx.rows
            with torch.enable_grad():
                chunk = logits[start:end].detach().requires_grad_()
                terms = _terms(chunk, targets[start:end], ctx.temperature, ctx.with_entropy)
                outputs = [terms[k] for k, _ in pairs]
                grads = [g[start:end] for _, g in pairs]
                (grad[start:end],) = torch.autograd.grad(outputs, chunk, grads)
        return grad, None, None, None, None, None


def eos_id(policy: Any) -> int:
    """The stop token a target ends with: the tokenizer's EOS if the policy stops at it."""
    eos = policy.tokenizer.eos_token_id
    if isinstance(eos, int) and eos in policy.stop_ids:
        return eos
    if not policy.stop_ids:
        raise ValueError(
            "The policy has no stop token (neither the model's generation config nor the "
            "tokenizer names an eos_token_id); set one so the model can learn to stop."
        )
    return min(policy.stop_ids)
