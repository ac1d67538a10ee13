"""A model by name: a registered one (``tiny``, ``smollm2-135m``) or a local model folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Policy
from selfplay.plugins.manager import registries


def build_learner(config: Any) -> Policy:
    """The policy ``config.model`` names, with the run's generation settings and seed."""
    generation = config.generation.model_dump()
    options: dict[str, Any] = {"seed": config.seed, **generation, **config.model_options}
    models = registries().models
    if config.model in models:
        return models.get(config.model)(**options)
    path = Path(config.model).expanduser()
    if path.is_dir():
        from selfplay.core.models.hf_policy import HFPolicy

        check_model_folder(path)
        try:
            return HFPolicy.from_pretrained(path, **options)
        except ImportError as err:  # an attention kernel or dtype this machine lacks
            raise ConfigError(str(err)) from None
        except (OSError, ValueError) as err:  # damaged or foreign files
            raise ConfigError(
                f"--model {path}: the folder cannot be loaded as a Hugging Face model "
                f"({type(err).__name__}: {str(err).strip().splitlines()[0]})."
            ) from None
    raise ConfigError(
        f"Model {config.model!r} is neither a registered model "
        f"({', '.join(sorted(models.entries))}) nor a local Hugging Face model folder. "
        "Nothing is downloaded at run time: pass a folder."
    )


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
