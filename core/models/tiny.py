"""The embedded default model ``tiny``: a small random-init Llama with the character tokenizer.

Why it exists: ``selfplay run`` must work on a laptop CPU with no network. Nothing is ever
downloaded; the model is built from ``tiny.json`` (shipped beside this module) and weights
drawn from a fixed torch seed, so ``build_tiny(seed=0)`` is the same model on every machine
with the same torch version. About 0.87M parameters: on 2 CPU threads it generates thousands
of tokens per second, enough to learn tic-tac-toe and Kuhn poker by self-play in minutes.

A saved folder is an ordinary Hugging Face checkpoint: ``AutoModelForCausalLM`` and
``AutoTokenizer`` reload it offline, and ``HFPolicy.from_pretrained`` plays with it.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from selfplay.core.models.hf_policy import HFPolicy
from selfplay.core.models.tokenizer import build_char_tokenizer

# What the tiny model's policy uses unless told otherwise: game answers are a few characters,
# and it cannot read a rules paragraph, so it sees only the compact state.
TINY_POLICY_DEFAULTS: dict[str, Any] = {"max_new_tokens": 8, "include_system": False}


def tiny_config(**overrides: Any) -> LlamaConfig:
    """The architecture from ``tiny.json``, any field overridden (e.g. ``num_hidden_layers``)."""
    text = resources.files("selfplay.core.models").joinpath("tiny.json").read_text(encoding="utf-8")
    values = {**json.loads(text), **overrides}
    values.pop("model_type", None)
    return LlamaConfig(**values)


def build_tiny(seed: int = 0, **overrides: Any) -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """A fresh tiny model and its tokenizer; the weights depend only on ``seed`` (and torch)."""
    tokenizer = build_char_tokenizer()
    config = tiny_config(**overrides)
    if config.vocab_size != len(tokenizer):
        raise ValueError(
            f"tiny.json has vocab_size={config.vocab_size} but the character tokenizer has "
            f"{len(tokenizer)} tokens; set vocab_size to {len(tokenizer)}."
        )
    # A private RNG stream: building the model neither reads nor disturbs the global seed.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.eval()
    return model, tokenizer


def save_tiny(path: str | Path, seed: int = 0, **overrides: Any) -> Path:
    """Write a fresh tiny model and tokenizer to ``path`` as a Hugging Face folder."""
    path = Path(path)
    model, tokenizer = build_tiny(seed, **overrides)
    tokenizer.model_max_length = model.config.max_position_embeddings
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def load_tiny_policy(
    path: str | Path | None = None,
    model_seed: int = 0,
    layers: int | None = None,
    hidden: int | None = None,
    **options: Any,
) -> HFPolicy:
    """The ``tiny`` model as a policy: built from ``model_seed``, or loaded from ``path``.

    ``layers`` and ``hidden`` size it (``--set model_options.layers=2``: 4 layers of width 128
    by default; the feed-forward width stays 3x ``hidden``), e.g. a smaller learner beside a
    larger one. ``options`` go to `HFPolicy` (``name``, ``max_new_tokens``, ``temperature``,
    ``top_p``, ``include_system``, ``seed``) over `TINY_POLICY_DEFAULTS`.
    """
    options = {"name": "tiny", **TINY_POLICY_DEFAULTS, **options}
    if path is not None:
        return HFPolicy.from_pretrained(path, **options)
    sizes: dict[str, int] = {}
    if layers is not None:
        sizes["num_hidden_layers"] = _size("layers", layers)
    if hidden is not None:
        heads = tiny_config().num_attention_heads
        if _size("hidden", hidden) % heads:
            raise ValueError(
                f"tiny's hidden must be a multiple of {heads} (its heads); got {hidden}."
            )
        sizes.update(hidden_size=hidden, intermediate_size=3 * hidden)
    model, tokenizer = build_tiny(model_seed, **sizes)
    return HFPolicy(model, tokenizer, **options)


def _size(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"tiny's {name} must be a whole number of at least 1; got {value!r}.")
    return value
