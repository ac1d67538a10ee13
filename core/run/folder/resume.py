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

from selfplay.core.config.changes import differences
from selfplay.core.models.lora import adapter_state_dict, load_adapter_state_dict
from selfplay.core.run.folder import checkpoint
from selfplay.core.run.folder.run_folder import RunFolder, config_text, read_config
from selfplay.core.train.learners import Learner
from selfplay.core.train.schedules import stretched
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
    if differ := setting_differences(rest["config_hash"], settings, saved):
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


def schedule_notes(folder: RunFolder, done: int, trains: Any, total: int) -> list[str]:
    """What a resume's new ``total`` does to each learner's cosine (its ``trains``), read
    against the run folder's config.yaml before the resume rewrites it."""
    before = read_config(folder.path).iterations
    return sorted({note for train in trains if (note := stretched(train, done, before, total))})


def _key(state: RunState, learner: Learner) -> str:
    """How a learner's entries are named in a checkpoint: ``model`` for the shared policy,
    ``model/NAME`` for each of several learners."""
    return "" if state.shared else f"/{learner.name}"


# ---- whether a checkpoint was written with the settings a resume brings -----------------
#
# The rule is core/config/changes.py's: the checkpoint's copy of config.yaml against the
# resume's settings. A checkpoint without a readable copy is compared by its settings' hash.


def saved_settings(path: Path) -> dict[str, Any]:
    """The checkpoint's copy of config.yaml ({} when it cannot be read)."""
    try:
        saved = yaml.safe_load((Path(path) / checkpoint.CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return saved if isinstance(saved, dict) else {}


def setting_differences(saved_hash: str, settings: dict[str, Any], saved: dict[str, Any]) -> str:
    """What differs between the checkpoint and the resume's ``settings`` ("" when nothing
    does): the first few settings, or the two hashes when the checkpoint keeps no copy."""
    if saved:
        found = differences(saved, settings)
        more = f" and {len(found) - 4} more" if len(found) > 4 else ""
        return "; ".join(found[:4]) + more
    ours = checkpoint.config_hash(settings)
    if saved_hash in (ours, checkpoint.config_hash(settings, with_minutes=True)):
        return ""
    return f"hash {saved_hash} in the checkpoint, {ours} now"
