"""Hugging Face hub ids (``Org/Name``) as models, through the Hugging Face cache.

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

from selfplay.api.errors import ConfigError

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
