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

Also here, for every caller that runs a model with a cache (generation on left-padded
prompts; the shared-prefix scoring of core/models/prefix_scoring.py): `left_pad`, and
`cache_kwarg`, the name the model's forward takes its cache by.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
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
