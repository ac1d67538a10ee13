"""Scoring rows that share a prefix, reading the shared part once, with or without gradients.

`score` (core/models/scoring.py) packs each (prompt, answer) pair into a row of its own, so a
prompt shared by several rows runs through the model once per row. Rows share a lot: under
``generation.choice=legal`` every legal answer of a move is a row after the same prompt (nine
of them at an empty tic-tac-toe board, in play, in the policy table, and in ``legal-pg``'s
update), a GRPO group's completions follow one prompt, and every turn of every match opens
with the same rules (68 of SmolLM2's 94 tokens at tic-tac-toe). `score_shared` runs the
shared parts once and every row's own tokens after them, in up to three passes:

1. ``preamble``: the prompts' common prefix, once, when it is long enough to pay;
2. ``prompts``: each distinct prompt but its last token, once, after the preamble;
3. ``rows``: each row's own tokens (its prompt's last token, or what follows the preamble,
   then its answer), read as `score` reads a row, the logits at the answer positions only.

Each pass runs with the key-value cache on; before the next, the cache's tensors are selected
along the batch (`index_select`, whose backward adds in a fixed order), one copy per node of the
next pass.
Selecting keeps autograd: the gradient of every copy flows back into the one pass that made
it, so the shared part's backward runs once too. Segments are right-padded, so the cache has
gaps where a shorter segment ended; the attention mask covers them, and position ids count
each row's real tokens, so the values are those of `score` up to float rounding, gradients
included (tests/test_prefix_scoring.py: 1e-5 relative in fp32). Earlier passes keep no logits
at all (the output layer sees no position, `answer_positions`).

Which passes run is `Shape.plan`: the cheapest in padded tokens (each pass costing
`PASS_TOKENS` more), and the row pass unless sharing costs at most `SHARE_AT_MOST` of it (the
cache copies cost something too). The update's micro-batches are sized on the same shape
(core/train/update/micro_batches.py, `TokenBudget`), which counts the prompt once and each row's
copy of the cache.

`can_share` says where it cannot apply, and the row pass runs instead: a model whose forward
takes no ``position_ids`` or cache (or that cannot be unwrapped to a Hugging Face model to
tell), without an output layer to cut, with an attention kernel other than ``eager`` or
``sdpa`` (flash attention's padding-free path does not take the gaps), with gradient
checkpointing (which turns the cache off), or whose cache is not made of plain full-attention
layers (sliding windows, linear attention; found after the first pass).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from selfplay.api.objective import Scored
from selfplay.core.models.kv_cache import cache_kwarg
from selfplay.core.models.scoring import answer_positions, output_layer, pack, score, score_packed

#: Sharing runs when its padded tokens are at most this share of the row pass's.
SHARE_AT_MOST = 0.75
#: What one more forward pass costs, in padded tokens (the tiny model's, on a CPU).
PASS_TOKENS = 32
#: The passes `Shape.plan` chooses among, the row pass first.
PLANS: tuple[tuple[str, ...], ...] = (
    ("rows",),
    ("prompts", "rows"),
    ("preamble", "rows"),
    ("preamble", "prompts", "rows"),
)
#: (nodes, padded width, cached positions each node reads) of one forward pass.
Pass = tuple[int, int, int]


@dataclass
class Shape:
    """What scoring a batch of (prompt, answer) rows costs, added a row at a time (`add`):
    `plan` chooses the passes, `passes` sizes them (for the update's token budget)."""

    share: bool = True  # False: always the row pass (a model that cannot share)
    held: int = 0  # a preamble already in a cache, read by every pass (prompts come without it)
    once: bool = False  # a row equal to one already added costs nothing (`distinct_rows`)
    rows: int = 0
    longest: int = 0  # prompt + answer
    longest_prompt: int = 0
    shortest_prompt: int = 0
    longest_answer: int = 0
    preamble: int = 0  # the length of every prompt's common prefix
    first: tuple[int, ...] = ()
    counts: dict[tuple[int, ...], int] = field(default_factory=dict)  # rows per prompt
    seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=set)

    def add(self, prompt: Sequence[int], answer: Sequence[int]) -> None:
        row = (tuple(prompt), tuple(answer))
        if self.once and row in self.seen:
            return
        self.seen.add(row)
        self.longest = max(self.longest, len(prompt) + len(answer))
        self.longest_answer = max(self.longest_answer, len(answer))
        self.rows += 1
        if not self.share:  # the row pass reads nothing else
            return
        prompt = tuple(prompt)
        if self.rows == 1:
            self.first, self.preamble, self.shortest_prompt = prompt, len(prompt), len(prompt)
        elif prompt not in self.counts:
            self.preamble = _common(self.first, prompt, self.preamble)
        self.longest_prompt = max(self.longest_prompt, len(prompt))
        self.shortest_prompt = min(self.shortest_prompt, len(prompt))
        self.counts[prompt] = self.counts.get(prompt, 0) + 1

    @property
    def cut(self) -> int:
        """The preamble's length: every prompt keeps at least two tokens after it (one for
        its own pass, one beside its answers)."""
        return max(0, min(self.preamble, self.shortest_prompt - 2))

    def plan(self) -> tuple[str, ...]:
        """The cheapest passes in padded tokens, the row pass unless sharing saves enough."""
        if not self.share or self.shortest_prompt < 2 or self.rows < 2:
            return PLANS[0]
        usable = [p for p in PLANS[1:] if "preamble" not in p or self.cut]
        best = min(usable, key=self._cost)  # the first of equals: fewer passes
        return best if self._cost(best) <= SHARE_AT_MOST * self._cost(PLANS[0]) else PLANS[0]

    def passes(self, plan: tuple[str, ...] | None = None) -> list[Pass]:
        """(nodes, padded width, cached positions) of each pass of ``plan`` (`plan()`'s)."""
        return self._passes(self.plan() if plan is None else plan)

    def _cost(self, plan: tuple[str, ...]) -> int:
        passes = self._passes(plan)
        return sum(nodes * width for nodes, width, _ in passes) + PASS_TOKENS * len(passes)

    def _passes(self, plan: tuple[str, ...]) -> list[Pass]:
        if self.held:
            return [(n, w, c + self.held) for n, w, c in self._unheld(plan)]
        return self._unheld(plan)

    def _unheld(self, plan: tuple[str, ...]) -> list[Pass]:
        if plan == PLANS[0]:
            return [(self.rows, self.longest, 0)]
        cut = self.cut if "preamble" in plan else 0
        wide, answer, rows = self.longest_prompt, self.longest_answer, self.rows
        out = [(1, cut, 0)] if cut else []
        if "prompts" in plan:
            return [*out, (len(self.counts), wide - 1 - cut, cut), (rows, 1 + answer, wide - 1)]
        return [*out, (rows, wide - cut + answer, cut)]


def shape_of(
    prompts: Sequence[Sequence[int]],
    answers: Sequence[Sequence[int]],
    share: bool = True,
    held: int = 0,
) -> Shape:
    shape = Shape(share=share, held=held)
    for prompt, answer in zip(prompts, answers, strict=True):
        shape.add(prompt, answer)
    return shape


def can_share(model: torch.nn.Module) -> bool:
    """Whether `score_shared` can read ``model`` from a cache (see the module doc)."""
    base = _unwrapped(model)
    if base is None or output_layer(model) is None:
        return False
    parameters = inspect.signature(base.forward).parameters
    if "position_ids" not in parameters or not {"cache", "past_key_values"} & set(parameters):
        return False
    kernel = getattr(base.config, "_attn_implementation", None) or "eager"
    return kernel in ("eager", "sdpa") and not _checkpointing(base)


def score_shared(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    answers: Sequence[Sequence[int]],
    pad_id: int,
    temperature: float = 1.0,
    with_entropy: bool = True,
    preamble: Any = None,
) -> Scored:
    """`score`'s values, reading what the rows share once (see the module doc).

    ``preamble``: a prefix of every prompt already run, its cache held (`HeldPreamble`,
    core/train/update/micro_batches.py); each row reads it from there and only what follows
    runs.
    """
    if preamble is not None:
        return _after(model, prompts, answers, pad_id, temperature, with_entropy, preamble)
    shape = shape_of(prompts, answers, all(answers) and can_share(model))
    plan = shape.plan()
    if plan == PLANS[0]:
        return score(model, prompts, answers, pad_id, temperature, with_entropy)
    segments, parents, rests = _segments(prompts, plan, shape.cut)
    try:
        return _score_passes(
            model, segments, parents, rests, answers, pad_id, temperature, with_entropy
        )
    except _NoCache:
        return score(model, prompts, answers, pad_id, temperature, with_entropy)


def _after(model, prompts, answers, pad_id, temperature, with_entropy, preamble) -> Scored:
    """`score_shared` of rows whose prompts open with ``preamble.tokens``, read from its cache."""
    held = len(preamble.tokens)
    if any(tuple(p[:held]) != preamble.tokens or len(p) < held + 2 for p in prompts):
        raise ValueError("every prompt scored after a held preamble opens with it, and goes on")
    rests = [p[held:] for p in prompts]
    shape = shape_of(rests, answers, True, held)
    segments, parents, rests = _segments(rests, shape.plan(), shape.cut)
    return _score_passes(
        model, segments, parents, rests, answers, pad_id, temperature, with_entropy, preamble
    )


def fill_cache(model: torch.nn.Module, tokens: Sequence[int]) -> DynamicCache | None:
    """The key-value cache of ``tokens`` run as one row, as `score_shared`'s preamble pass runs
    it (with gradients where they are on); None where `score_shared` cannot read a cache."""
    base = _unwrapped(model)
    if base is None or not can_share(model):
        return None
    device = next(model.parameters()).device
    cache = DynamicCache(config=base.config)
    ids, seen = _right_pad([tokens], 0, device)
    positions = torch.arange(len(tokens), device=device)[None, :]
    inputs = {"position_ids": positions, "use_cache": True, cache_kwarg(base): cache}
    with answer_positions(
        model, torch.zeros(1, 1, dtype=torch.long, device=device), positions[:, :0]
    ):
        model(input_ids=ids, attention_mask=seen, **inputs)
    return cache if _filled(cache, len(tokens)) else None


class _NoCache(Exception):
    """The model did not fill a cache of plain full-attention layers."""


@dataclass(frozen=True)
class _Segments:
    tokens: list[Sequence[int]]
    parents: list[int] | None  # each node's node in the pass before; None for the first pass


def _score_passes(
    model: torch.nn.Module,
    segments: Sequence[_Segments],
    parents: Sequence[int],
    rests: Sequence[Sequence[int]],
    answers: Sequence[Sequence[int]],
    pad_id: int,
    temperature: float,
    with_entropy: bool,
    start: Any = None,
) -> Scored:
    base = _unwrapped(model)
    assert base is not None  # can_share said so
    device = next(model.parameters()).device
    kwarg = cache_kwarg(base)
    cache = DynamicCache(config=base.config) if start is None else start.cache(base.config)
    seen = lengths = None  # the cache's attention mask and real length, per node
    if start is not None:  # one node: the held preamble
        seen = torch.ones(1, len(start.tokens), dtype=torch.long, device=device)
        lengths = seen.sum(-1)
    for level in segments:
        ids, mask = _right_pad(level.tokens, pad_id, device)
        if level.parents is None and start is None:
            seen = mask.new_zeros(len(ids), 0)
            lengths = mask.new_zeros(len(ids))
        else:
            up = level.parents if level.parents is not None else [0] * len(ids)
            seen, lengths = _expand(cache, seen, lengths, up)
        seen = torch.cat([seen, mask], dim=1)
        positions = lengths[:, None] + torch.arange(ids.shape[1], device=device)
        nodes = torch.arange(len(ids), device=device)[:, None]
        inputs = {"position_ids": positions, "use_cache": True, kwarg: cache}
        with answer_positions(model, nodes, positions[:, :0]):  # no logits: only the cache
            model(input_ids=ids, attention_mask=seen, **inputs)
        if not _filled(cache, seen.shape[1]):
            raise _NoCache
        lengths = lengths + mask.sum(-1)
    seen, lengths = _expand(cache, seen, lengths, parents)
    ids, mask, starts = (t.to(device) for t in pack(rests, answers, pad_id))
    positions = lengths[:, None] + torch.arange(ids.shape[1], device=device)
    inputs = {"position_ids": positions, "use_cache": True, kwarg: cache}
    mask = torch.cat([seen, mask], dim=1)
    lengths_of = [len(a) for a in answers]
    return score_packed(model, ids, starts, lengths_of, temperature, with_entropy, mask, **inputs)


def _segments(
    prompts: Sequence[Sequence[int]], plan: tuple[str, ...], cut: int
) -> tuple[list[_Segments], list[int], list[Sequence[int]]]:
    """The shared passes' segments, each row's node in the last of them, and each row's own
    tokens before its answer."""
    out: list[_Segments] = []
    start = cut if "preamble" in plan else 0
    if start:
        out.append(_Segments([prompts[0][:start]], None))
    if "prompts" not in plan:
        return out, [0] * len(prompts), [p[start:] for p in prompts]
    node: dict[tuple[int, ...], int] = {}
    for prompt in prompts:
        node.setdefault(tuple(prompt), len(node))
    out.append(_Segments([p[start:-1] for p in node], [0] * len(node) if start else None))
    return out, [node[tuple(p)] for p in prompts], [p[-1:] for p in prompts]


def _expand(
    cache: DynamicCache, seen: torch.Tensor, lengths: torch.Tensor, parents: Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cache, its mask and lengths, one copy per node of the next pass (autograd kept).

    `index_select`, not indexing (`DynamicCache.batch_select_indices`): the backward of an
    index with repeats adds the copies' gradients with atomic adds on a CPU of several threads,
    in whatever order they land, so two runs of the same update differed at float rounding;
    `index_select`'s backward (`index_add`) adds them in index order."""
    index = torch.tensor(parents, device=seen.device)
    for layer in cache.layers:
        if layer.get_seq_length() > 0:
            layer.keys = layer.keys.index_select(0, index)
            layer.values = layer.values.index_select(0, index)
    return seen[index], lengths[index]


def _filled(cache: DynamicCache, width: int) -> bool:
    plain = bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)
    return plain and cache.get_seq_length() == width


def _right_pad(
    rows: Sequence[Sequence[int]], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(r) for r in rows])
    width = int(lengths.max())
    ids = torch.tensor([[*r, *[pad_id] * (width - len(r))] for r in rows], dtype=torch.long)
    mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
    return ids.to(device), mask.to(device)


def _common(first: tuple[int, ...], other: tuple[int, ...], limit: int) -> int:
    """The length of the common prefix of ``first[:limit]`` and ``other``."""
    limit = min(limit, len(other))
    if first[:limit] == other[:limit]:
        return limit
    return next(k for k in range(limit) if first[k] != other[k])


def _checkpointing(model: PreTrainedModel) -> bool:
    """Whether activation (gradient) checkpointing is on, under either of its names."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), name):
            return bool(getattr(model, name))
    return False


def _unwrapped(model: Any) -> PreTrainedModel | None:
    """The Hugging Face model inside Fabric's, DDP's and peft's wrappers, if there is one."""
    for _ in range(5):
        if isinstance(model, PreTrainedModel):
            return model
        get = getattr(model, "get_base_model", None)
        model = get() if callable(get) else getattr(model, "module", None)
    return None
