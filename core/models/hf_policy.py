"""A Hugging Face causal LM as a policy: batched, left-padded sampling with a KV cache.

Why our own decoding loop rather than ``model.generate``: the rollout hot path needs the
log-probability of every sampled token, per-row stopping, and sampling noise that belongs to
the match rather than to the batch. The loop is short and keeps the model's keys and values in
a cache allocated once per call (`selfplay.core.models.kv_cache`), not grown each step. It also
runs the prompt prefix that every row shares (a game's rules, a role tag, a retry message)
once instead of once per row, and keeps the part every call shares between calls (the
preamble): on a CPU, prefill dominates the cost of short answers (benchmarks/RESULTS.md).

What a caller must know:

- Prompt. The request's messages go through the tokenizer's chat template when it has one
  (encoded without extra special tokens; the template places them), otherwise through the
  plain role-tagged format of `selfplay.core.models.tokenizer.render_plain_chat` (encoded with the
  tokenizer's special tokens, e.g. ``<bos>``). ``include_system=False`` drops system
  messages. A prompt longer than ``max_prompt_tokens`` keeps its last tokens.
  ``share_prefix=False`` turns off the shared-prefix prefill (e.g. for a model whose cache
  cannot be repeated along the batch).
- Stopping. A row stops at its first EOS (any id in the model's generation config or the
  tokenizer's ``eos_token_id``) or after ``max_new_tokens``. ``token_ids`` INCLUDE that EOS,
  so a trainer learns to stop; ``text`` is decoded without special tokens, so
  ``tokenizer.decode(token_ids, skip_special_tokens=True) == text``.
- Log-probabilities. ``logprobs[i] = log_softmax(logits / temperature)[token_ids[i]]`` with
  the model's raw logits at that position: temperature-scaled, but NOT renormalised by top-p,
  and the same definition for greedy decoding. A trainer recomputes it with one forward pass
  over ``prompt_ids + token_ids``.
- Randomness. Each row samples by the Gumbel-max trick with noise from its own
  ``torch.Generator``, seeded from one draw of the request's ``rng`` (the match's generator,
  so one draw per request) mixed with the policy's ``seed``. A match therefore samples the
  same tokens whatever else shares its batch, up to floating-point differences that padding
  can cause in near-ties. Reusing match seeds reuses the noise: give each match a fresh seed
  (or change ``seed``) to get fresh samples.
- Precision. Under mixed precision the trainer sets ``forward_context`` (its autocast), so
  sampling runs in bf16 like the update's forward; logits are cast to fp32 before the
  log-softmax, so log-probabilities are fp32 in every precision.
- Numerics. Padding and the shared-prefix prefill change logits only at rounding level
  (~1e-6): greedy output of a row equals its batch-of-one output, and the logprobs match a
  plain forward pass over ``prompt_ids + token_ids`` to 1e-4 (both are tested).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from selfplay.api.policy import Policy, Request
from selfplay.api.types import Completion, Message
from selfplay.core.models.kv_cache import (
    MIN_PREAMBLE,
    PreambleCache,
    cache_kwarg,
    left_pad,
    preallocated,
    preallocated_cache,
    shared_prefix_length,
)
from selfplay.core.models.policy_table import CHOICES, choose_legal
from selfplay.core.models.sampling import RowNoise, top_p_filter
from selfplay.core.models.tokenizer import render_plain_chat

# A shared prompt prefix is run once when that saves at least this many token positions
# (one extra batch-1 forward pass costs about as much as ~100 batched positions on a CPU).
SHARED_PREFIX_MIN_SAVING = 256
_MIX = 0x9E3779B97F4A7C15  # odd 64-bit constant that spreads the policy seed over all bits


class HFPolicy(Policy):
    """Completes requests with a causal LM held in memory (see the module doc for contracts)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "hf",
        max_new_tokens: int = 64,
        temperature: float = 1.0,
        top_p: float = 1.0,
        include_system: bool = True,
        seed: int = 0,
        max_prompt_tokens: int | None = None,
        share_prefix: bool = True,
        choice: str = "free",
    ) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}.")
        if temperature <= 0:
            raise ValueError(
                f"temperature must be > 0 (use greedy=True for argmax), got {temperature}."
            )
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}.")
        if choice not in CHOICES:
            raise ValueError(f"choice must be one of {', '.join(CHOICES)}, got {choice!r}.")
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.include_system = include_system
        self.seed = seed
        self.share_prefix = share_prefix
        self.choice = choice  # "legal": pick among the game's legal answers (policy_table.py)
        # set by the trainer when each role has its own adapter: role -> context manager
        self.role_context: Callable[[str], AbstractContextManager[Any]] | None = None
        # set by the trainer under mixed precision: the autocast the update's forward runs in
        self.forward_context: Callable[[], AbstractContextManager[Any]] | None = None
        self.max_prompt_tokens = max_prompt_tokens or _default_prompt_limit(model, max_new_tokens)
        # the preamble every prompt of these weights shares, kept between calls (kv_cache.py)
        self.preamble: PreambleCache | None = PreambleCache() if share_prefix else None
        self.stop_ids = _stop_ids(model, tokenizer)
        self._cache_kwarg = cache_kwarg(model)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else min(self.stop_ids, default=0)

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        *,
        dtype: Any = None,
        device: str | None = None,
        attn_implementation: str | None = None,
        **options: Any,
    ) -> HFPolicy:
        """Load a local model folder (or an already-cached hub name); never downloads.

        ``attn_implementation`` is passed to Hugging Face (``sdpa``, ``eager``,
        ``flash_attention_2``); None keeps the model's default.
        """
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        extra = {"attn_implementation": attn_implementation} if attn_implementation else {}
        try:
            model = AutoModelForCausalLM.from_pretrained(
                path, local_files_only=True, dtype=dtype, **extra
            )
        except ImportError as err:
            raise ImportError(
                f"model_options.attn_implementation={attn_implementation!r} cannot be used "
                f"here ({err}). flash_attention_2 needs a CUDA GPU and the flash-attn package "
                "(pip install 'selfplay-rl[gpu]'); 'sdpa' needs nothing extra."
            ) from err
        if device is not None:
            model = model.to(device)
        model.eval()
        options.setdefault("name", Path(str(path)).name or "hf")
        return cls(model, tokenizer, **options)

    # ---- prompts -------------------------------------------------------------------------

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text for one request's messages (chat template or plain role tags).

        A last message from the assistant is a prefill: the reply starts with its text and
        the model continues it (a judge told to begin with "Score:").
        """
        if not self.include_system:
            messages = [m for m in messages if m.role != "system"]
        prefill = ""
        if messages and messages[-1].role == "assistant":
            prefill, messages = messages[-1].content, messages[:-1]
        if self.tokenizer.chat_template:
            text = self.tokenizer.apply_chat_template(
                [m.as_dict() for m in messages], tokenize=False, add_generation_prompt=True
            )
        else:
            text = render_plain_chat(messages)
        return text + prefill

    def encode(self, requests: Sequence[Request]) -> list[list[int]]:
        """Prompt token ids per request, left-truncated to ``max_prompt_tokens``.

        Requests with the same messages (a GRPO group, the first turn of every match) are
        rendered and tokenized once.
        """
        distinct: dict[tuple[Message, ...], int] = {}
        which = [distinct.setdefault(tuple(req.messages), len(distinct)) for req in requests]
        texts = [self.render(messages) for messages in distinct]
        special = not self.tokenizer.chat_template
        ids = self.tokenizer(texts, add_special_tokens=special, return_attention_mask=False)
        rows = ids["input_ids"]
        return [rows[i][-self.max_prompt_tokens :] for i in which]

    # ---- acting --------------------------------------------------------------------------

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        if not requests:
            return []
        if self.role_context is not None:  # e.g. one LoRA adapter per role: one call per role
            out: list[Completion | None] = [None] * len(requests)
            for role in sorted({req.role for req in requests}):
                index = [i for i, req in enumerate(requests) if req.role == role]
                with self.role_context(role):
                    done = self._act([requests[i] for i in index], greedy)
                for i, completion in zip(index, done, strict=True):
                    out[i] = completion
            return out  # type: ignore[return-value]
        return self._act(requests, greedy)

    def row_seeds(self, requests: Sequence[Request]) -> list[int]:
        """One sampling seed per request: a draw of its match's ``rng`` mixed with ``seed``."""
        return [(req.rng.getrandbits(64) ^ (self.seed * _MIX)) % (1 << 63) for req in requests]

    def _act(self, requests: Sequence[Request], greedy: bool) -> list[Completion]:
        prompts = self.encode(requests)
        seeds = self.row_seeds(requests)
        # a request that lists its answers (a judge's verdicts) chooses whatever the setting
        if self.choice == "legal" or any(req.menu for req in requests):
            return choose_legal(self, requests, prompts, seeds, greedy=greedy)
        return self.write(prompts, seeds, greedy)

    def write(
        self, prompts: Sequence[Sequence[int]], seeds: Sequence[int], greedy: bool
    ) -> list[Completion]:
        """Completions written token by token (sampled, or argmax when ``greedy``)."""
        tokens, logprobs = self.generate(prompts, seeds, greedy=greedy)
        texts = self.tokenizer.batch_decode(tokens, skip_special_tokens=True)
        return [
            Completion(text=text, token_ids=tuple(t), logprobs=tuple(lp), prompt_ids=tuple(p))
            for text, t, lp, p in zip(texts, tokens, logprobs, prompts, strict=True)
        ]

    @torch.inference_mode()
    def generate(
        self, prompts: Sequence[Sequence[int]], seeds: Sequence[int], *, greedy: bool = False
    ) -> tuple[list[list[int]], list[list[float]]]:
        """Sample continuations of token-id prompts: (token ids, their logprobs) per row."""
        was_training = self.model.training  # sample without dropout, then restore
        if was_training:
            self.model.eval()
        try:
            with self.forward_context() if self.forward_context else nullcontext():
                return self._decode(prompts, seeds, greedy)
        finally:
            if was_training:
                self.model.train()

    def _decode(
        self, prompts: Sequence[Sequence[int]], seeds: Sequence[int], greedy: bool
    ) -> tuple[list[list[int]], list[list[float]]]:
        device = self.model.device
        # the longest a row gets: the prompt width (plus padding) and every new token
        capacity = max(len(p) for p in prompts) + self.max_new_tokens
        cache = preallocated_cache(self.model.config, capacity)
        logits, prompt_mask, position = self._prefill(prompts, cache)
        width = prompt_mask.shape[1]
        full_mask = prompt_mask.new_ones(len(prompts), width + self.max_new_tokens)
        full_mask[:, :width] = prompt_mask
        vocab = logits.shape[-1]
        noise = None if greedy else RowNoise(seeds, vocab, self.max_new_tokens, device)
        stop = torch.tensor(sorted(self.stop_ids), device=device, dtype=torch.long)
        done = torch.zeros(len(prompts), dtype=torch.bool, device=device)
        tokens = torch.empty(len(prompts), self.max_new_tokens, dtype=torch.long, device=device)
        logps = torch.empty(len(prompts), self.max_new_tokens, device=device)
        for step in range(self.max_new_tokens):
            token, logp = self._choose(logits, noise, step)
            tokens[:, step], logps[:, step] = token, logp
            done |= torch.isin(token, stop)
            if bool(done.all()) or step + 1 == self.max_new_tokens:
                break
            position = position + 1
            mask = full_mask[:, : width + step + 1]
            logits = self._forward(token[:, None], mask, position, cache)
        return _trim(tokens[:, : step + 1], logps[:, : step + 1], stop)

    def _prefill(
        self, prompts: Sequence[Sequence[int]], cache: DynamicCache
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Fill the cache with the prompts: (last logits, attention mask, last position).

        The prefix every prompt shares (a game's rules, a role tag, a retry message) is run
        once and its cache copied to every row; each row's remainder is left-padded after it,
        so padding sits between the shared prefix and the row's own tokens, masked out. The
        part of it that earlier calls shared too comes from the preamble cache
        (core/models/kv_cache.py) while the weights are unchanged.
        """
        device, rows = self.model.device, len(prompts)
        shared = shared_prefix_length(prompts) if self.share_prefix else 0
        known = self._preamble(prompts[0][:shared], rows, cache)
        if shared > known and (shared - known) * (rows - 1) >= SHARED_PREFIX_MIN_SAVING:
            self._run_prefix(prompts[0][known:shared], known, cache)
            known = shared
        if known:
            cache.batch_repeat_interleave(rows)
        ids, own_mask = left_pad([p[known:] for p in prompts], self.pad_id, device)
        positions = known + (own_mask.cumsum(-1) - 1).clamp(min=0)
        mask = torch.cat([own_mask.new_ones(rows, known), own_mask], dim=-1)
        logits = self._forward(ids, mask, positions, cache)
        return logits, mask, positions[:, -1:]

    def _preamble(self, prefix: Sequence[int], rows: int, cache: DynamicCache) -> int:
        """Put the cached preamble that ``prefix`` starts with into ``cache`` (one row), or
        compute and keep ``prefix`` when several rows share it; the positions filled."""
        if self.preamble is None or len(prefix) < MIN_PREAMBLE or not preallocated(cache):
            return 0
        entry = self.preamble.lookup(self.model, prefix)
        if entry is not None:
            for layer, (keys, values) in zip(cache.layers, entry.layers, strict=True):
                layer.update(keys, values)
            return len(entry.tokens)
        if rows < 2:
            return 0
        self._run_prefix(prefix, 0, cache)
        self.preamble.store(self.model, prefix, cache)
        return len(prefix)

    def _run_prefix(self, tokens: Sequence[int], start: int, cache: DynamicCache) -> None:
        """Extend the cache's one row by ``tokens``, at positions from ``start`` on."""
        device = self.model.device
        ids = torch.tensor([list(tokens)], dtype=torch.long, device=device)
        mask = torch.ones(1, start + len(tokens), dtype=torch.long, device=device)
        positions = torch.arange(start, start + len(tokens), device=device)[None]
        self._forward(ids, mask, positions, cache)

    def _forward(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: DynamicCache
    ) -> torch.Tensor:
        """Float logits at the last position of each row, extending ``cache``."""
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self._cache_kwarg: cache},
        )
        return out.logits[:, -1].float()

    def _choose(
        self, logits: torch.Tensor, noise: RowNoise | None, step: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Next token per row and its log-probability under the temperature-scaled logits."""
        if self.temperature != 1.0:
            logits = logits / self.temperature
        logp = torch.log_softmax(logits, dim=-1)
        if noise is None:
            token = logp.argmax(-1)
        else:
            scores = top_p_filter(logp, self.top_p) if self.top_p < 1.0 else logp
            token = (scores + noise.gumbel(step)).argmax(-1)
        return token, logp.gather(-1, token[:, None]).squeeze(-1)


def _trim(
    tokens: torch.Tensor, logps: torch.Tensor, stop: torch.Tensor
) -> tuple[list[list[int]], list[list[float]]]:
    """Cut every row just after its first stop token."""
    is_stop = torch.isin(tokens, stop)
    first = is_stop.int().argmax(-1)
    lengths = torch.where(is_stop.any(-1), first + 1, tokens.shape[1]).tolist()
    token_rows, logp_rows = tokens.tolist(), logps.tolist()
    return (
        [row[:n] for row, n in zip(token_rows, lengths, strict=True)],
        [row[:n] for row, n in zip(logp_rows, lengths, strict=True)],
    )


def _stop_ids(model: Any, tokenizer: Any) -> set[int]:
    ids: set[int] = set()
    config_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (config_eos, tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif value is not None:
            ids.update(int(v) for v in value)
    return ids


def _default_prompt_limit(model: Any, max_new_tokens: int) -> int:
    context = getattr(model.config, "max_position_embeddings", None) or 1 << 20
    return max(1, context - max_new_tokens)
