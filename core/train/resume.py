"""What a checkpoint holds, and how a run is put back exactly as it was.

Besides the model (or its LoRA adapters) and the optimiser, a checkpoint carries the state of
everything that shapes what comes next: the estimator's baselines, the sampler, the league
(pool, ratings, exploitability history), the rewards, the objective, every callback, the
reference policy, the RNG states and the loop's counters. Entries added since the first
release are optional on load, so older run folders still resume.

A resume never loses work: it continues from the newest checkpoint that is complete and
loads, says which damaged ones it passed over (they are set aside, not deleted), and starts
over only when the run certainly never wrote a checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from rich.markup import escape

from selfplay.core.models.lora import adapter_state_dict, load_adapter_state_dict
from selfplay.core.train import checkpoint
from selfplay.core.train.run_folder import config_text


def save(trainer: Any, iteration: int) -> None:
    """Checkpoint the run after ``iteration`` (every process calls this)."""
    t = trainer
    t.progress.iteration = iteration
    if t.main and t.folder:
        t.progress.episodes_bytes = t.folder.episodes_size()
    state: dict[str, Any] = {
        "optimizer": t.optimizer,
        "estimator": t.estimator.state_dict(),
        "sampler": t.sampler.state_dict(),
        "league": t.league.state_dict(),
        "reward": t.reward.state_dict(),
        "objective": t.objective.state_dict(),
        "callbacks": {name: callback.state_dict() for name, callback in t.callbacks},
        "rng": checkpoint.rng_state(t.rng, t.generator),
        "progress": t.progress.__dict__.copy(),
        "nonfinite_streak": t.updater.nonfinite_streak,
        "weight_average": t.updater.average.state_dict() if t.updater.average else {},
        "config_hash": checkpoint.config_hash(t.config.model_dump(mode="json")),
    }
    if t.config.lora.enabled:
        state["adapters"] = adapter_state_dict(t.model.module)
    else:
        state["model"] = t.model
    state.update(t.reference.state_dict())
    files = {checkpoint.CONFIG: config_text(t.config)}
    checkpoint.save(t.fabric, t.shared_path, iteration, state, files)
    t.league.after_checkpoint()
    if t.main:
        t.league.write_reports()


def checkpoints(trainer: Any) -> checkpoint.Found:
    """The checkpoints of the run folder being resumed; raises when some were written but
    none is complete (then nothing is changed: the user decides)."""
    folder = Path(trainer.config.resume)
    found = checkpoint.scan(folder)
    for path, why in found.damaged:
        trainer._say(escape(f"warning: the checkpoint {path} is damaged ({why}); passing over it."))
    if found.complete or found.never:
        return found
    raise checkpoint.CheckpointError(
        f"{folder} holds checkpoints but none is complete ({found.report() or 'none found'}); "
        "nothing was changed. Restore a checkpoint folder from a backup, or start a new run."
    )


def restore_newest(trainer: Any, found: checkpoint.Found) -> Path:
    """Restore the newest complete checkpoint that loads, falling back to older ones."""
    for path in found.complete:
        try:
            restore(trainer, path)
        except checkpoint.UnreadableCheckpoint as err:
            trainer._say(f"warning: {escape(str(err))} Trying the one before.")
            found.damaged.append((path, "it does not load"))
            continue
        if found.damaged:
            trainer._say(f"Resuming from {path.name}, the newest complete checkpoint.")
        if trainer.main:
            for moved in checkpoint.set_aside(found):
                trainer._say(f"The damaged checkpoint is kept as {moved}; delete it at will.")
        return path
    raise checkpoint.CheckpointError(
        f"No checkpoint of {trainer.config.resume} loads ({found.report()}); nothing was "
        "changed. Restore a checkpoint folder from a backup, or start a new run."
    )


def restore(trainer: Any, path: Any) -> None:
    """Load the checkpoint at ``path`` into the trainer's objects, in place."""
    t = trainer
    state: dict[str, Any] = {"optimizer": t.optimizer}
    if not t.config.lora.enabled:
        state["model"] = t.model
    rest = checkpoint.load(t.fabric, path, state)
    saved_hash = rest["config_hash"]
    settings = t.config.model_dump(mode="json")
    current = checkpoint.config_hash(settings)
    # a checkpoint written before minutes left the hash hashed its own limit
    legacy = {**settings, "minutes": _saved_minutes(path, settings["minutes"])}
    if saved_hash not in (current, checkpoint.config_hash(legacy, with_minutes=True)):
        raise checkpoint.CheckpointError(
            f"The checkpoint {path} was written with a different config ({saved_hash} vs "
            f"{current}); resume with the run folder's own config.yaml."
        )
    if t.config.lora.enabled:
        load_adapter_state_dict(t.model.module, rest["adapters"])
    t.reference.load_state_dict(rest)
    t.estimator.load_state_dict(rest["estimator"])
    t.sampler.load_state_dict(rest["sampler"])
    t.league.load_state_dict(rest["league"])
    t.reward.load_state_dict(rest["reward"])
    t.objective.load_state_dict(rest.get("objective", {}))
    saved_callbacks = rest.get("callbacks", {})
    for name, callback in t.callbacks:
        if name in saved_callbacks:
            callback.load_state_dict(saved_callbacks[name])
    checkpoint.restore_rng(rest["rng"], t.rng, t.generator)
    t.progress = type(t.progress)(**rest["progress"])
    t.updater.nonfinite_streak = rest["nonfinite_streak"]
    if t.updater.average is not None:
        t.updater.average.load_state_dict(rest.get("weight_average") or {})
    if t.main and t.folder:
        t.folder.truncate(t.progress.iteration, t.progress.episodes_bytes)


def _saved_minutes(path: Any, default: Any) -> Any:
    """The time limit in the checkpoint's copy of config.yaml (``default`` if unreadable)."""
    try:
        saved = yaml.safe_load((Path(path) / checkpoint.CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return default
    return saved.get("minutes", default) if isinstance(saved, dict) else default
