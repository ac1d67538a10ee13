"""A model by name: a registered one (``tiny``, ``smollm2-135m``), a local model folder, a
Hugging Face hub id (``Org/Name[@revision]``, through the Hugging Face cache: below), or, for
every seat but the learner's, a served model (``openai:URL#MODEL``: core/models/served/policy.py).

A name that is neither a registered model nor a local folder, and reads like a hub id, is
looked up with ``huggingface_hub.snapshot_download``: online, the model's files (config,
weights, tokenizer; not the other formats a repository may also hold) are downloaded into the
cache, or found there up to date; offline (``HF_HUB_OFFLINE=1``) or when the hub cannot be
reached, the cached copy is used. Where neither works, the error names the id, the cache
folder and the way out. The cache is Hugging Face's own (``HF_HOME``, ``HF_HUB_CACHE``), so
models fetched by any other tool are found, and a private or gated model uses ``HF_TOKEN``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Policy
from selfplay.api.sampler import is_served
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
        from selfplay.core.models.served.policy import ServedPolicy, ServedSpec

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


# Org/Name, optionally @revision (a branch, tag or commit)
HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")
# what a causal LM and its tokenizer need; "*.bin" only for repositories without safetensors
FILES = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken", "*.py"]
LEGACY_WEIGHTS = ["*.bin"]


def is_hub_id(name: str) -> bool:
    """Whether ``name`` reads like ``Org/Name`` (and is not a path that exists)."""
    return bool(HUB_ID.match(name)) and not Path(name).expanduser().exists()


def hub_folder(name: str, what: str = "--model") -> Path:
    """The local snapshot folder of hub id ``name`` (``Org/Name[@revision]``), fetched when
    online; ``what`` names the option in errors."""
    match = HUB_ID.match(name)
    if match is None:
        raise ConfigError(f"{what} {name!r} is not a Hugging Face hub id (Org/Name).")
    repo, revision = match["repo"], match["revision"]
    folder = _snapshot(repo, revision, FILES, what, name)
    if not any(folder.glob("*.safetensors")) and not any(folder.glob("*.bin")):
        folder = _snapshot(repo, revision, FILES + LEGACY_WEIGHTS, what, name)
    return folder


def _snapshot(repo: str, revision: str | None, patterns: list[str], what: str, name: str) -> Path:
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    cache = constants.HF_HUB_CACHE
    try:
        return Path(snapshot_download(repo, revision=revision, allow_patterns=patterns))
    except GatedRepoError:
        raise ConfigError(
            f"{what} {name}: the model is gated on the Hugging Face hub; accept its terms on "
            "its page and set HF_TOKEN (or run `hf auth login`)."
        ) from None
    except RevisionNotFoundError:
        raise ConfigError(
            f"{what} {name}: the hub model has no revision {revision!r}; name a branch, tag "
            "or commit it has."
        ) from None
    except RepositoryNotFoundError:
        raise ConfigError(
            f"{what} {name}: no such model on the Hugging Face hub (or it is private: set "
            f"HF_TOKEN), and no local folder of that name."
        ) from None
    except LocalEntryNotFoundError:
        why = (
            "HF_HUB_OFFLINE is set"
            if constants.HF_HUB_OFFLINE
            else f"the hub ({constants.ENDPOINT}) could not be reached"
        )
        raise ConfigError(
            f"{what} {name}: the model is not in the Hugging Face cache ({cache}) and "
            f"{why}. Download it where the network is reachable (`hf download {repo}`) into "
            "that cache (HF_HOME / HF_HUB_CACHE choose where it is), or pass a local model "
            "folder."
        ) from None
