"""A step's micro-batches: packed to a memory budget, and the preamble they share run once.

`pack_by_tokens` packs a minibatch's items in order into micro-batches whose activations fit
a `TokenBudget` (core/train/update/updater.py says why a step has micro-batches).

Every turn of every match opens with the same rules (130 of SmolLM2's 150 tokens at Kuhn
poker). `score_shared` reads a shared prefix once per micro-batch; but a micro-batch is sized
to bound memory (`TokenBudget`), and for a pretrained model one menu of a 150-token prompt
nearly fills it, so the rules ran once per decision, forward and backward. Held, they run
once per step: the preamble's forward with gradients, its key-value cache detached into
leaves that every micro-batch's cache is built from, the micro-batches' backward passes
adding into the leaves' gradients, and at the role's last micro-batch one backward of the
preamble with the sum. The gradient is the same sum in another order (float rounding,
tests/test_held_preamble.py), and the memory the same as one micro-batch's preamble pass: it
is held instead of made again.

The reference (the KL term) reads a preamble of its own, held without gradients. It is
scored for all the role's micro-batches before the policy's preamble is made: under LoRA the
reference swaps adapter weights in place, which must not happen under a graph still to be
back-propagated.

Held only in one process (DDP synchronises gradients in the last backward pass, and the
preamble's comes after it) and where the role's items need two micro-batches or more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from selfplay.api.objective import Scored
from selfplay.core.models.prefix_scoring import PLANS, Pass, Shape, _common, fill_cache

#: A common prefix shorter than this is left to each micro-batch.
MIN_HELD_TOKENS = 16


class HeldPreamble:
    """A preamble's key-value cache; with ``trained``, leaves whose gradients `backward`
    sends through the pass that made them."""

    def __init__(self, tokens: Sequence[int], cache: DynamicCache, trained: bool) -> None:
        self.tokens = tuple(tokens)
        made = [t for layer in cache.layers for t in (layer.keys, layer.values)]
        self.made = made if trained else []
        self.leaves = [t.detach().requires_grad_(trained) for t in made]

    def cache(self, config: Any) -> DynamicCache:
        """A fresh cache holding the preamble (each reader extends its own)."""
        cache = DynamicCache(config=config)
        for layer in range(len(self.leaves) // 2):
            cache.update(self.leaves[2 * layer], self.leaves[2 * layer + 1], layer)
        return cache

    def backward(self) -> None:
        """The preamble's backward pass, once, with what every reader sent its leaves."""
        pairs = [(m, leaf.grad) for m, leaf in zip(self.made, self.leaves, strict=True)]
        pairs = [(m, grad) for m, grad in pairs if grad is not None]
        if pairs:
            torch.autograd.backward([m for m, _ in pairs], [g for _, g in pairs])
        self.made, self.leaves = [], []


def hold(model: torch.nn.Module, tokens: Sequence[int], trained: bool) -> HeldPreamble | None:
    """``tokens`` run once under ``model``; None where no cache can be read from it."""
    cache = fill_cache(model, tokens)
    return None if cache is None else HeldPreamble(tokens, cache, trained)


def held_length(items: Sequence[Any]) -> int:
    """The prefix every prompt of ``items`` opens with, each keeping two tokens after it
    (`Shape.cut`'s rule); 0 when shorter than `MIN_HELD_TOKENS`."""
    prompts = [tuple(s.prompt_ids) for item in items for s in item.samples]
    if len(prompts) < 2:
        return 0
    first = prompts[0]
    common, shortest = len(first), len(first)
    for prompt in prompts[1:]:
        common = _common(first, prompt, common)
        shortest = min(shortest, len(prompt))
    cut = max(0, min(common, shortest - 2))
    return cut if cut >= MIN_HELD_TOKENS else 0


def by_preamble(items: Sequence[Any]) -> list[tuple[list[Any], int]]:
    """``items`` in parts that share a preamble (the rules as each seat reads them: "You are
    player_0", "... player_1"), in order of first appearance, each with `held_length`;
    an item joins the first part whose first `MIN_HELD_TOKENS` tokens it shares."""
    parts: list[tuple[tuple[int, ...], list[Any]]] = []
    for item in items:
        head = tuple(item.samples[0].prompt_ids[:MIN_HELD_TOKENS])
        for key, part in parts:
            if key == head:
                part.append(item)
                break
        else:
            parts.append((head, [item]))
    return [(part, held_length(part)) for _, part in parts]


def distinct_rows(
    prompts: Sequence[Sequence[int]], answers: Sequence[Sequence[int]]
) -> tuple[list[int], list[int]] | None:
    """Rows equal in prompt and answer, scored once: (the first row of each kind, which of
    those each row is); None where every row differs. Equal rows have equal scores, so the
    update scores each kind once and spreads its values back (`Updater`); under dropout
    they would not, and it scores every row. At Kuhn poker 64 decisions of a SmolLM2
    iteration are 12 prompts; in tic-tac-toe every match opens at the empty board."""
    index: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {}
    rows = zip(prompts, answers, strict=True)
    which = [index.setdefault((tuple(p), tuple(a)), len(index)) for p, a in rows]
    if len(index) == len(which):
        return None
    first: dict[int, int] = {}
    for row, kind in enumerate(which):
        first.setdefault(kind, row)
    return [first[kind] for kind in range(len(index))], which


#: The rates a model's config hands to its attention kernels and layers.
DROPOUT_SETTINGS = ("attention_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop", "dropout")


def dropout_runs(model: torch.nn.Module) -> bool:
    """Whether any dropout is on in ``model``: a ``Dropout`` layer or a rate in a config."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout) and module.p > 0:
            return True
        config = getattr(module, "config", None)
        rates = [getattr(config, key, None) for key in DROPOUT_SETTINGS]
        if any(isinstance(rate, float) and rate > 0 for rate in rates):
            return True
    return False


class StepPreambles:
    """The preambles of one optimiser step: ``passes`` are its (role, micro-batch) pairs in
    order and ``lengths`` each pass's held preamble (0: none); the passes of one preamble are
    adjacent. ``updater`` owns the model and scores the reference (`references_after`)."""

    def __init__(self, updater: Any, passes: Sequence[tuple[Any, list[Any]]], lengths: list):
        self.updater, self.passes, self.lengths = updater, passes, lengths
        self.held: HeldPreamble | None = None
        self.reading: set[int] = set()  # the passes that read the held preamble
        self.references: dict[int, Scored | None] = {}

    def before(self, k: int) -> HeldPreamble | None:
        """The policy's preamble for pass ``k``, made at the first pass that reads it (after
        the reference has scored every pass that will); None where the pass holds none."""
        if not self.lengths[k]:
            return None
        if self.held is None:
            tokens, readers = self._tokens(k), self._readers(k)
            self.references = self.updater.references_after(tokens, readers)
            self.held, self.reading = hold(self.updater.model, tokens, trained=True), set(readers)
            if self.held is None:  # no cache to read: these passes run as they are
                for j in readers:
                    self.lengths[j] = 0
        return self.held

    def reference(self, k: int) -> Scored | None:
        """The reference's scores of pass ``k``, made with the preamble's first pass."""
        return self.references.pop(k, None)

    def after(self, k: int) -> None:
        """After pass ``k``'s backward: at the last pass reading the preamble, its own."""
        if self.held is not None and k + 1 not in self.reading:
            self.held.backward()
            self.held = None

    def drop(self) -> None:
        """A skipped step: nothing held survives it."""
        self.held, self.references, self.reading = None, {}, set()

    def _tokens(self, k: int) -> tuple[int, ...]:
        return tuple(self.passes[k][1][0].samples[0].prompt_ids[: self.lengths[k]])

    def _readers(self, k: int) -> dict[int, list[Any]]:
        """The passes reading pass ``k``'s preamble: from k on, while role and preamble hold."""
        role, tokens, out = self.passes[k][0], self._tokens(k), {}
        j = k
        while j < len(self.passes) and self.passes[j][0] == role and self.lengths[j]:
            if self._tokens(j) != tokens:
                break
            out[j] = self.passes[j][1]
            j += 1
        return out


# What a micro-batch's activations, kept for the backward pass, cost (fp32, dropout off): about
# this many bytes per padded token per unit of width per layer, and, for the attention weights,
# this many per pair of positions per head per layer. Measured with benchmarks/memory.py: 92
# bytes per unit for SmolLM2-135M under LoRA (220 MB a 138-token row), and for a 2-layer GPT-2
# of width 64 with 577-token rows 31 KB a token, which the two terms give (RESULTS.md, "Memory
# bounded by default"). A row reading a shared prefix from the cache keeps its copy of the
# cache's keys and values for the backward pass: this many bytes per cached position per unit
# of width per layer (float32 keys and values, repeated to every head as attention reads
# them), a twelfth of a token's cost. Each answer position's logits are kept for the backward
# pass, which writes their gradient over them, and the log-softmax works on copies of them a
# chunk at a time (core/models/scoring.py): counted at this many bytes per position per entry
# of the vocabulary, twice a float32 logit, about their cost where a pass's answers fill less
# than a chunk and more than it where they fill several, which leaves a wide vocabulary's pass
# room under the budget. Rows of a whole prompt dwarf them; rows that read their prompt from a
# cache do not (192 rows after a shared prompt held 0.6 GB of a 50k vocabulary's logits and
# their gradients, three times what a budget of activations alone counted). The automatic
# budget keeps a micro-batch near AUTO_BYTES.
BYTES_PER_TOKEN_UNIT = 96
BYTES_PER_PAIR = 8
BYTES_PER_CACHED_UNIT = 8
BYTES_PER_LOGIT = 8
AUTO_BYTES = 320 << 20


@dataclass(frozen=True)
class TokenBudget:
    """How large a micro-batch may grow: ``tokens`` padded tokens, or (``auto``) the bytes
    its activations and answer logits cost for a model of this width, depth, head count and
    vocabulary."""

    tokens: int | None = None
    width: int = 0
    depth: int = 0
    heads: int = 0
    vocab: int = 0

    @classmethod
    def auto(cls, model: Any) -> TokenBudget:
        config = getattr(model, "config", None)
        width = getattr(config, "hidden_size", None) or getattr(config, "n_embd", 768)
        depth = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", 12)
        heads = getattr(config, "num_attention_heads", None) or getattr(config, "n_head", 12)
        vocab = getattr(config, "vocab_size", None) or 0
        return cls(None, int(width), int(depth), int(heads), int(vocab))

    @property
    def limit(self) -> float:
        return float(AUTO_BYTES if self.tokens is None else self.tokens)

    def fits(self, rows: int, longest: int, answer: int = 0) -> bool:
        """Whether ``rows`` rows of ``longest`` padded tokens, ``answer`` of them the
        answer's, a row each, fit."""
        return self.cost([(rows, longest, 0)], rows * answer) <= self.limit

    def cost(self, passes: Sequence[Pass], answers: int = 0) -> float:
        """What forward passes of (rows, padded tokens, cached positions each row reads) and
        the logits of ``answers`` answer positions hold: padded tokens, a cached position at
        the share of a token it costs (logits not counted); or bytes."""
        if self.tokens is not None:
            share = BYTES_PER_CACHED_UNIT / BYTES_PER_TOKEN_UNIT
            return sum(n * (w + share * c) for n, w, c in passes)
        total = answers * self.vocab * BYTES_PER_LOGIT
        for rows, width, cached in passes:
            linear = rows * width * BYTES_PER_TOKEN_UNIT + rows * cached * BYTES_PER_CACHED_UNIT
            pairs = rows * width * (cached + width) * self.heads * BYTES_PER_PAIR
            total += (linear * self.width + pairs) * self.depth
        return float(total)


def pack_by_tokens(
    items: list[Any], budget: TokenBudget, shared: bool = False, held: int = 0, once: bool = False
) -> list[list[Any]]:
    """``items`` in order, in micro-batches that fit ``budget``: every row of a micro-batch
    (each item's samples: prompt and answer) padded to its longest, or with ``shared`` the
    passes `score_shared` will run (a shared prompt once, each row after it). An item never
    splits (its rows are one DPO pair or one legal move's menu); one over the budget alone is
    a micro-batch of its own. Shared passes may also grow to what the largest of their items
    costs alone as a row per sample (what its micro-batch held before prompts were read
    once), so a menu over the budget shares its preamble with the next ones. ``held``: the
    first tokens of every prompt are a preamble held for the step (`StepPreambles`), which
    every pass reads and none runs. ``once``: a row equal to one already in its micro-batch
    is scored once (`distinct_rows`) and costs nothing more."""
    batches: list[list[Any]] = []
    current: list[Any] = []
    shape, largest = Shape(share=shared, held=held, once=once), 0.0
    for item in items:
        alone = _cost(budget, _with(Shape(share=False), item))
        trial = _with(shape, item)  # no copy: a shape that overflows is started afresh
        plan = trial.plan()
        room = budget.limit if plan == PLANS[0] else max(budget.limit, largest, alone)
        if current and _cost(budget, trial, plan) > room:
            batches.append(current)
            fresh = Shape(share=shared, held=held, once=once)
            current, trial, largest = [], _with(fresh, item), 0.0
        current.append(item)
        shape, largest = trial, max(largest, alone)
    if current:
        batches.append(current)
    return batches


def _cost(budget: TokenBudget, shape: Shape, plan: tuple[str, ...] | None = None) -> float:
    """What scoring ``shape`` with gradients holds: its passes, and the logits of its rows'
    answer positions (each row padded to the longest answer)."""
    return budget.cost(shape.passes(plan), shape.rows * shape.longest_answer)


def _with(shape: Shape, item: Any) -> Shape:
    for sample in item.samples:
        shape.add(sample.prompt_ids[shape.held :], sample.token_ids)
    return shape
