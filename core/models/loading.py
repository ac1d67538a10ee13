"""A model by name: a registered one (``tiny``, ``smollm2-135m``), a local model folder, a
Hugging Face hub id (``Org/Name[@revision]``, through the Hugging Face cache: core/models/hub.py),
or, for every seat but the learner's, a served model (``openai:URL#MODEL``: core/models/served.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Policy
from selfplay.api.sampler import is_served
from selfplay.core.models.hub import hub_folder, is_hub_id
from selfplay.plugins.manager import registries


def build_learner(config: Any, what: str = "--model") -> Policy:
    """The policy ``config.model`` names, with the run's generation settings and seed;
    ``what`` names the option in errors. The learner's tokens and log-probabilities come from
    our own model, so a served model is refused here (`build_model` takes one)."""
    if is_served(config.model):
        raise ConfigError(
            f"{what} {config.model!r} is a served model, which cannot be the learner: training "
            "needs the log-probabilities of its own tokens from a model in memory. Pass a "
            "registered model, a model folder or a hub id; served models can hold the other "
            "seats (--opponent fixed:openai:...), judge (reward_options.judge.model=openai:...) "
            "or join the pool (pool.scripted=[openai:...])."
        )
    policy = build_model(config, what)
    choice = config.generation.choice
    if choice != "free":
        if not hasattr(policy, "choice"):
            raise ConfigError(
                f"generation.choice={choice!r} needs a model that scores answers in memory "
                f"(a Hugging Face model); {what} {config.model!r} is a "
                f"{type(policy).__name__}. Use generation.choice=free with it."
            )
        policy.choice = choice
    return policy


def build_model(config: Any, what: str) -> Policy:
    """`build_learner` for a seat that only generates (a judge): served models welcome."""
    # the learner's way of choosing moves is set by build_learner, not passed to every model
    generation = config.generation.model_dump(exclude={"choice"})
    options: dict[str, Any] = {"seed": config.seed, **generation, **config.model_options}
    if is_served(config.model):
        from selfplay.core.models.served import ServedPolicy, ServedSpec

        spec = ServedSpec.parse(config.model, what)
        return ServedPolicy(spec, **{**options, "name": config.model})
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
