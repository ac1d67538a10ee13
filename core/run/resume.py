"""What a checkpoint holds, and how a run is put back exactly as it was.

Besides the model (or its LoRA adapters) and the optimiser (of each learner, when a run has
several: ``model/NAME``, ``optimizer/NAME``, ``learners/NAME``), a checkpoint carries the state of
everything that shapes what comes next: the estimator's baselines, the sampler, the league
(pool, ratings, exploitability history), the rewards, the objective, every callback, the
reference policy, the RNG states and the loop's counters. Entries added since the first
release are optional on load, so older run folders still resume.

A resume never loses work: it continues from the newest checkpoint that is complete and
loads, says which damaged ones it passed over (they are set aside, not deleted), and starts
over only when the run certainly never wrote a checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from rich.markup import escape

from selfplay.core.config import RunConfig
from selfplay.core.config_learners import LearnerConfig
from selfplay.core.config_sections import ColdStartConfig, LoraConfig, TrainConfig
from selfplay.core.models.lora import adapter_state_dict, load_adapter_state_dict
from selfplay.core.run import checkpoint
from selfplay.core.run.run_folder import RunFolder, config_text
from selfplay.core.train.learners import Learner
from selfplay.core.train.state import RunState

Say = Callable[[str], None]


def save(
    state: RunState, fabric: Any, where: Path, folder: RunFolder | None, iteration: int
) -> None:
    """Checkpoint the run after ``iteration`` into the run folder ``where`` (every process
    calls this; ``folder`` is the run folder on process 0, None on the others)."""
    state.progress.iteration = iteration
    if folder:
        state.progress.episodes_bytes = folder.episodes_size()
    saved = state.state_dict()
    saved["config_hash"] = checkpoint.config_hash(state.config.model_dump(mode="json"))
    for learner in state.learners:
        key = _key(state, learner)
        if learner.config.lora.enabled:
            saved[f"adapters{key}"] = adapter_state_dict(learner.model.module)
        else:
            saved[f"model{key}"] = learner.model
        entries = saved if state.shared else saved[f"learners{key}"]
        entries.update(learner.reference.state_dict())
    files = {checkpoint.CONFIG: config_text(state.config)}
    checkpoint.save(fabric, where, iteration, saved, files)
    state.league.after_checkpoint()
    if folder:
        state.league.write_reports()


def checkpoints(resumed: Path, say: Say) -> checkpoint.Found:
    """The checkpoints of the run folder being resumed; raises when some were written but
    none is complete (then nothing is changed: the user decides)."""
    folder = Path(resumed)
    found = checkpoint.scan(folder)
    for path, why in found.damaged:
        say(escape(f"warning: the checkpoint {path} is damaged ({why}); passing over it."))
    if found.complete or found.never:
        return found
    raise checkpoint.CheckpointError(
        f"{folder} holds checkpoints but none is complete ({found.report() or 'none found'}); "
        "nothing was changed. Restore a checkpoint folder from a backup, or start a new run."
    )


def restore_newest(
    state: RunState, fabric: Any, found: checkpoint.Found, folder: RunFolder | None, say: Say
) -> Path:
    """Restore the newest complete checkpoint that loads, falling back to older ones."""
    for path in found.complete:
        try:
            restore(state, fabric, path, folder)
        except checkpoint.UnreadableCheckpoint as err:
            say(f"warning: {escape(str(err))} Trying the one before.")
            found.damaged.append((path, "it does not load"))
            continue
        if found.damaged:
            say(f"Resuming from {path.name}, the newest complete checkpoint.")
        if fabric.global_rank == 0:
            for moved in checkpoint.set_aside(found):
                say(f"The damaged checkpoint is kept as {moved}; delete it at will.")
        return path
    raise checkpoint.CheckpointError(
        f"No checkpoint of {state.config.resume} loads ({found.report()}); nothing was "
        "changed. Restore a checkpoint folder from a backup, or start a new run."
    )


def restore(state: RunState, fabric: Any, path: Any, folder: RunFolder | None) -> None:
    """Load the checkpoint at ``path`` into the run's ``state``, in place."""
    config = state.config
    loaded: dict[str, Any] = {}
    for learner in state.learners:
        key = _key(state, learner)
        loaded[f"optimizer{key}"] = learner.optimizer
        if not learner.config.lora.enabled:
            loaded[f"model{key}"] = learner.model
    rest = checkpoint.load(fabric, path, loaded)
    settings, saved = config.model_dump(mode="json"), saved_settings(path)
    if not same_settings(rest["config_hash"], settings, saved):
        differ = differences(saved, settings) or (
            f"hash {rest['config_hash']} in the checkpoint, {checkpoint.config_hash(settings)} now"
        )
        raise checkpoint.CheckpointError(
            f"The checkpoint {path} was written with other settings ({differ}); resume with "
            "the run folder's own config.yaml."
        )
    for learner in state.learners:
        if learner.config.lora.enabled:
            load_adapter_state_dict(learner.model.module, rest[f"adapters{_key(state, learner)}"])
    state.load_state_dict(rest)
    if folder:
        folder.truncate(state.progress.iteration, state.progress.episodes_bytes)


def _key(state: RunState, learner: Learner) -> str:
    """How a learner's entries are named in a checkpoint: ``model`` for the shared policy,
    ``model/NAME`` for each of several learners."""
    return "" if state.shared else f"/{learner.name}"


# ---- whether a checkpoint was written with the settings a resume brings -----------------
#
# A resume rebuilds its settings from the run folder's config.yaml, so a setting selfplay
# gained after the checkpoint was written is absent from the checkpoint's copy and holds its
# default now: it is left out before hashing, and an older run folder still resumes. A
# setting that really differs is named in the error, beside its two values.

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
        candidates.append(_known(settings, saved, _defaults()))
    minutes = saved.get("minutes", settings["minutes"])
    return any(
        saved_hash
        in (
            checkpoint.config_hash(candidate),
            checkpoint.config_hash({**candidate, "minutes": minutes}, with_minutes=True),
        )
        for candidate in candidates
    )


class _EachName(dict):
    """The defaults of a section keyed by names the user chose (``learners.NAME``): the same
    for every name."""

    def __init__(self, each: dict[str, Any]) -> None:
        super().__init__()
        self.each = each

    def get(self, key: Any, default: Any = None) -> Any:
        return self.each


def _defaults() -> dict[str, Any]:
    """Every setting's default, a learner's own sections included (a learner that sets
    ``train`` holds the whole train section)."""
    defaults = RunConfig().model_dump(mode="json")
    learner = LearnerConfig().model_dump(mode="json")
    for key, section in (
        ("train", TrainConfig),
        ("cold_start", ColdStartConfig),
        ("lora", LoraConfig),
    ):
        learner[key] = section().model_dump(mode="json")
    defaults["learners"] = _EachName(learner)
    return defaults


def _known(settings: dict[str, Any], saved: dict[str, Any], defaults: Any) -> dict[str, Any]:
    """``settings`` less each key that ``saved`` lacks and that holds its default (a setting
    added later); a key the user set, or one whose default is unknown, stays."""
    kept = {}
    for key, value in settings.items():
        default = defaults.get(key, MISSING) if isinstance(defaults, dict) else MISSING
        if key in saved and isinstance(value, dict) and isinstance(saved[key], dict):
            kept[key] = _known(value, saved[key], default)
        elif key in saved or value != default:
            kept[key] = value
    return kept


def differences(saved: dict[str, Any], settings: dict[str, Any], limit: int = 4) -> str:
    """The settings that differ, ``key: SAVED in the checkpoint, NOW now``, the first few."""
    found: list[str] = []

    def walk(old: Any, new: Any, prefix: str) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in sorted(set(old) | set(new)):
                if prefix or key not in checkpoint.UNHASHED | {"minutes"}:
                    walk(old.get(key, MISSING), new.get(key, MISSING), f"{prefix}{key}.")
        elif old != new and old is not MISSING:
            shown = "(absent)" if new is MISSING else repr(new)
            found.append(f"{prefix[:-1]}: {old!r} in the checkpoint, {shown} now")

    walk(saved, settings, "")
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return "; ".join(found[:limit]) + more
