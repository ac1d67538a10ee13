"""A model by name: a registered one (``tiny``, ``smollm2-135m``), a local model folder, or a
Hugging Face hub id (``Org/Name[@revision]``, through the Hugging Face cache: core/models/hub.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Policy
from selfplay.core.models.hub import hub_folder, is_hub_id
from selfplay.plugins.manager import registries


def build_learner(config: Any, what: str = "--model") -> Policy:
    """The policy ``config.model`` names, with the run's generation settings and seed;
    ``what`` names the option in errors."""
    generation = config.generation.model_dump()
    options: dict[str, Any] = {"seed": config.seed, **generation, **config.model_options}
    models = registries().models
    if config.model in models:
        return models.get(config.model)(**options)
    path = Path(config.model).expanduser()
    if not path.is_dir() and is_hub_id(config.model):
        return _from_folder(hub_folder(config.model, what), options, what, config.model)
    if path.is_dir():
        check_model_folder(path)
        return _from_folder(path, options, what)
    raise ConfigError(
        f"{what} {config.model!r} is neither a registered model "
        f"({', '.join(sorted(models.entries))}), a local Hugging Face model folder, nor a "
        "Hugging Face hub id (Org/Name)."
    )


def _from_folder(path: Path, options: dict[str, Any], what: str, name: str | None = None) -> Policy:
    from selfplay.core.models.hf_policy import HFPolicy

    if name is not None:
        options = {"name": name, **options}
    try:
        return HFPolicy.from_pretrained(path, **options)
    except ImportError as err:  # an attention kernel or dtype this machine lacks
        raise ConfigError(str(err)) from None
    except (OSError, ValueError) as err:  # damaged or foreign files
        raise ConfigError(
            f"{what} {name or path}: the folder {path} cannot be loaded as a Hugging Face "
            f"model ({type(err).__name__}: {str(err).strip().splitlines()[0]})."
        ) from None


# what a folder written by save_pretrained holds: one of each group
MODEL_FILES = {
    "the config": ("config.json",),
    "the weights": ("*.safetensors", "*.bin"),
    "the tokenizer": ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json"),
}


def check_model_folder(path: Path) -> None:
    """Refuse, naming what is missing, a folder that is not a Hugging Face model folder
    (before Hugging Face blames an unrelated package for it)."""
    missing = [
        f"{what} ({' or '.join(patterns)})"
        for what, patterns in MODEL_FILES.items()
        if not any(next(path.glob(pattern), None) for pattern in patterns)
    ]
    if missing:
        raise ConfigError(
            f"--model {path} is a folder but not a Hugging Face model folder: it lacks "
            f"{'; '.join(missing)}. Save one with model.save_pretrained(FOLDER) and "
            "tokenizer.save_pretrained(FOLDER), or pass a registered model name "
            "(`selfplay run --model tiny`)."
        )
