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

        try:
            return HFPolicy.from_pretrained(path, **options)
        except ImportError as err:  # an attention kernel or dtype this machine lacks
            raise ConfigError(str(err)) from None
    raise ConfigError(
        f"Model {config.model!r} is neither a registered model "
        f"({', '.join(sorted(models.entries))}) nor a local Hugging Face model folder. "
        "Nothing is downloaded at run time: pass a folder."
    )
