"""A key/value cache whose buffers are allocated once per decode, for the CPU and CUDA alike.

Hugging Face's `DynamicCache` grows every layer's keys and values by ``torch.cat`` at every
decoding step: each step copies the whole cache so far, per layer, which cost about a fifth of
a lock-step tick with short answers. The decode loop knows the longest a row can get (prompt
width plus ``max_new_tokens``), so each layer here holds buffers of that length from its first
write on, writes every step's keys and values in place, and hands attention a view of the
filled part. Attention therefore sees tensors of the same shape and values as under
`DynamicCache` (the same masks are built from the same lengths), and the sampled tokens and
their log-probabilities are the same (tested).

The shared-prefix prefill still works: the prefix is run once for one row, and
`batch_repeat_interleave` copies it into buffers for every row, of the full length.
Layers of another kind (sliding-window or linear-attention layers) are left as they are.

`PreambleCache` keeps, between calls, the preamble every prompt of the current weights starts
with. Every turn of every match opens with the same tokens: the chat template's head and the
game's rules in the system message (68 of SmolLM2's 94 tokens at tic-tac-toe). The decode loop
runs the prefix a batch shares once (core/models/hf_policy.py); the preamble cache keeps that
prefix's keys and values between calls, so a lock-step tick, an evaluation round or a served
request reads only what follows it. The cache narrows to what every prompt it met shares:
a call whose prompts share fewer tokens with it keeps the common part (a causal model's keys
and values of the first n tokens do not depend on what follows), and one that shares nothing
long enough replaces it.

It is thrown away when the weights change: each entry holds the weights' version (every
parameter's in-place version counter, which an optimiser step, a loaded snapshot or a synced
copy moves) and the adapter in use (LoRA's per-role adapters), and a lookup under another
version misses. It is also thrown away when an iteration's matches begin (`new_round`): a
kept preamble changes how a call splits its work, and so its numbers at float rounding, and a
run resumed from a checkpoint must compute what the run that went on did. Its memory is the
keys and values of one row of the preamble: for SmolLM2-135M under 3 MB for 68 tokens.

Also here, for every caller that runs a model with a cache (generation on left-padded
prompts; the shared-prefix scoring of core/models/prefix_scoring.py): `left_pad`, and
`cache_kwarg`, the name the model's forward takes its cache by.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class PreallocatedLayer(DynamicLayer):
    """A `DynamicLayer` writing into buffers of ``capacity`` positions, grown only if exceeded."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self.length = 0
        self._keys: torch.Tensor | None = None
        self._values: torch.Tensor | None = None

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if self._keys is None or end > self._keys.shape[-2]:
            self._allocate(key_states, value_states, max(end, self.capacity))
        assert self._keys is not None and self._values is not None
        self._keys[:, :, self.length : end] = key_states
        self._values[:, :, self.length : end] = value_states
        self.length = end
        self.keys, self.values = self._keys[:, :, :end], self._values[:, :, :end]
        return self.keys, self.values

    def _allocate(self, keys: torch.Tensor, values: torch.Tensor, capacity: int) -> None:
        """Buffers of ``capacity`` positions holding what is cached so far."""
        rows, heads = keys.shape[:2]
        new_keys = keys.new_empty(rows, heads, capacity, keys.shape[-1])
        new_values = values.new_empty(rows, heads, capacity, values.shape[-1])
        if self.length:
            new_keys[:, :, : self.length] = self.keys
            new_values[:, :, : self.length] = self.values
        self._keys, self._values = new_keys, new_values

    def batch_repeat_interleave(self, repeats: int) -> None:
        if not self.length:
            return
        assert self._keys is not None and self._values is not None
        rows, heads, capacity = self._keys.shape[:3]
        keys = self._keys.new_empty(rows * repeats, heads, capacity, self._keys.shape[-1])
        values = self._values.new_empty(rows * repeats, heads, capacity, self._values.shape[-1])
        keys.view(rows, repeats, heads, capacity, -1)[:, :, :, : self.length] = self.keys[:, None]
        values.view(rows, repeats, heads, capacity, -1)[:, :, :, : self.length] = self.values[
            :, None
        ]
        self._keys, self._values = keys, values
        self.keys, self.values = keys[:, :, : self.length], values[:, :, : self.length]

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if not self.length:
            return
        assert self._keys is not None and self._values is not None
        self._keys, self._values = self._keys[indices], self._values[indices]
        self.keys, self.values = self._keys[:, :, : self.length], self._values[:, :, : self.length]

    def crop(self, tokens_to_remove: int) -> None:
        super().crop(tokens_to_remove)
        if self.is_initialized and self.keys is not None:
            self.length = self.keys.shape[-2]

    def reset(self) -> None:
        super().reset()
        self.length, self._keys, self._values = 0, None, None


def preallocated_cache(config: Any, capacity: int) -> DynamicCache:
    """A `DynamicCache` for ``config`` whose full-attention layers preallocate ``capacity``."""
    cache = DynamicCache(config=config)
    if not cache.layers:  # a config without layer types: one full-attention layer per layer
        count = config.get_text_config(decoder=True).num_hidden_layers
        cache.layers = [DynamicLayer() for _ in range(count)]
        cache.layer_class_to_replicate = None
    cache.layers = [
        PreallocatedLayer(capacity) if type(layer) is DynamicLayer else layer
        for layer in cache.layers
    ]
    return cache


def left_pad(
    prompts: Sequence[Sequence[int]], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded rows of ``prompts`` and their attention mask, on ``device``."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        if prompt:
            ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            mask[row, width - len(prompt) :] = 1
    return ids.to(device), mask.to(device)


def cache_kwarg(model: Any) -> str:
    """``cache`` in recent transformers, ``past_key_values`` before (and for other models)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    parameters = inspect.signature(base.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def preallocated(cache: Any) -> bool:
    """Whether every layer of ``cache`` is a plain full-attention one the preamble can fill."""
    return all(isinstance(layer, PreallocatedLayer) for layer in cache.layers)


def shared_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Tokens all prompts start with, leaving every prompt at least one token of its own."""
    rows = [list(p) for p in prompts]
    low, high = min(rows), max(rows)  # a prefix shared by these two is shared by all rows
    common = next((i for i, (a, b) in enumerate(zip(low, high, strict=False)) if a != b), len(low))
    return max(0, min(common, min(len(row) for row in rows) - 1))


# ---- the preamble kept between calls ----------------------------------------------------

#: A preamble shorter than this is not kept (one more forward pass would cost more).
MIN_PREAMBLE = 16
#: Entries kept at once (one per adapter in use: per-role LoRA adapters).
MAX_ENTRIES = 8


#: The current round (`new_round`); an entry kept in an earlier one is never read.
_round = [0]


def new_round() -> None:
    """Every policy's preamble is forgotten: each iteration's matches start from an empty
    cache, so what they compute never depends on what was cached before (a run resumed from a
    checkpoint plays bitwise as the run that went on)."""
    _round[0] += 1


@dataclass
class Entry:
    tokens: tuple[int, ...]
    version: tuple[int, ...]
    layers: list[tuple[torch.Tensor, torch.Tensor]]  # each layer's keys and values, one row
    round: int = field(default_factory=lambda: _round[0])

    def narrowed(self, length: int) -> Entry:
        layers = [(k[:, :, :length], v[:, :, :length]) for k, v in self.layers]
        return Entry(self.tokens[:length], self.version, layers, self.round)


class PreambleCache:
    """``lookup(model, prefix)``: the cached preamble's keys and values that ``prefix`` starts
    with (narrowed to what they share), or None; ``store`` keeps a newly computed one."""

    def __init__(self) -> None:
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.hits = self.misses = 0

    def lookup(self, model: Any, prefix: Sequence[int]) -> Entry | None:
        key, entry = _adapter(model), None
        found = self.entries.get(key)
        kept = found is not None and found.round == _round[0]
        if kept and found.version == weights_version(model):  # type: ignore[union-attr]
            shared = _common(found.tokens, prefix)
            if shared >= MIN_PREAMBLE:
                entry = found if shared == len(found.tokens) else found.narrowed(shared)
                self.entries[key] = entry
                self.entries.move_to_end(key)
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def store(self, model: Any, tokens: Sequence[int], cache: Any) -> None:
        """Keep the first ``len(tokens)`` positions of ``cache``'s one row (just computed for
        the prefix several prompts shared: one prompt alone is no evidence of a preamble)."""
        if len(tokens) < MIN_PREAMBLE:
            return
        n = len(tokens)
        layers = [(ly.keys[:1, :, :n].clone(), ly.values[:1, :, :n].clone()) for ly in cache.layers]
        key = _adapter(model)
        self.entries[key] = Entry(tuple(tokens), weights_version(model), layers)
        self.entries.move_to_end(key)
        while len(self.entries) > MAX_ENTRIES:
            self.entries.popitem(last=False)

    def clear(self) -> None:
        self.entries.clear()


def weights_version(model: Any) -> tuple[int, ...]:
    """Every parameter's in-place version counter: moved by any change to the weights."""
    return tuple(p._version for p in model.parameters())


def _adapter(model: Any) -> str:
    """The LoRA adapter in use, if any (one entry each)."""
    active = getattr(model, "active_adapters", None)
    try:
        return ",".join(active() if callable(active) else active or ())
    except (TypeError, ValueError):  # a model without adapters
        return ""


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
