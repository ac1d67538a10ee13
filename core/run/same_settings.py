"""Whether a checkpoint was written with the settings a resume brings.

A checkpoint keeps a hash of the settings that shape training (``checkpoint.config_hash``)
and a copy of the run's config.yaml. A resume rebuilds its settings from the run folder's
config.yaml, so a setting that selfplay gained after the checkpoint was written is absent from
that copy and holds its default now: it is left out before hashing, and an older run folder
still resumes. A setting that really differs is named in the error, beside its two values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from selfplay.core.config import RunConfig
from selfplay.core.run import checkpoint

# what a resume may change, or what does not shape training (checkpoint.config_hash)
NOT_COMPARED = {"iterations", "resume", "out", "name", "eval", "recipe", "minutes"}
MISSING = object()


def saved_settings(path: Path) -> dict[str, Any]:
    """The checkpoint's copy of config.yaml ({} when it cannot be read)."""
    try:
        saved = yaml.safe_load((Path(path) / checkpoint.CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return saved if isinstance(saved, dict) else {}


def same_settings(saved_hash: str, settings: dict[str, Any], saved: dict[str, Any]) -> bool:
    """Whether ``settings`` (the resume's, as JSON) hash to ``saved_hash``: as they are, less
    the settings added since ``saved`` was written, and either way with the checkpoint's own
    time limit (checkpoints written before a resume could set a new one hashed it)."""
    candidates = [settings]
    if saved:
        candidates.append(_known(settings, saved, RunConfig().model_dump(mode="json")))
    minutes = saved.get("minutes", settings["minutes"])
    return any(
        saved_hash
        in (
            checkpoint.config_hash(candidate),
            checkpoint.config_hash({**candidate, "minutes": minutes}, with_minutes=True),
        )
        for candidate in candidates
    )


def _known(settings: dict[str, Any], saved: dict[str, Any], defaults: Any) -> dict[str, Any]:
    """``settings`` less each key that ``saved`` lacks and that holds its default (a setting
    added later); a key the user set, or one whose default is unknown, stays."""
    kept = {}
    for key, value in settings.items():
        default = defaults.get(key, MISSING) if isinstance(defaults, dict) else MISSING
        if key not in saved:
            if value == default:
                continue
            kept[key] = value
        elif isinstance(value, dict) and isinstance(saved[key], dict):
            kept[key] = _known(value, saved[key], default)
        else:
            kept[key] = value
    return kept


def differences(saved: dict[str, Any], settings: dict[str, Any], limit: int = 4) -> str:
    """The settings that differ, ``key: SAVED in the checkpoint, NOW now``, the first few."""
    found: list[str] = []

    def walk(old: Any, new: Any, prefix: str) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in sorted(set(old) | set(new)):
                if prefix or key not in NOT_COMPARED:
                    walk(old.get(key, MISSING), new.get(key, MISSING), f"{prefix}{key}.")
        elif old != new and old is not MISSING:
            shown = "(absent)" if new is MISSING else repr(new)
            found.append(f"{prefix[:-1]}: {old!r} in the checkpoint, {shown} now")

    walk(saved, settings, "")
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return "; ".join(found[:limit]) + more
