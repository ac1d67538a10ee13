"""Which settings a resume may change, and whether a checkpoint was written with the settings
a resume brings: one rule, computed from the schema.

A resume continues a run with the settings its checkpoint was written with (each checkpoint
keeps a copy of config.yaml). Two kinds of setting are left out of the comparison:

- settings that leave the iterations already trained as they were (`RESUMABLE`): the total of
  iterations and the iteration where the cosine learning rate ends (both shape only the
  iterations ahead), the time limit, the micro-batch budget (a minibatch's gradient is the same
  sum however its backward passes split it), the thread count and the trackers. A resume may
  change them (``selfplay run --resume RUN --set train.micro_batch_tokens=1024``).
- where the run lives and how it is measured (`NOT_TRAINING`): its folder and name, the
  recipe's name (what the recipe set is in the settings themselves), the evaluation.

Every other setting must equal the checkpoint's copy, read as this selfplay reads a config (a
setting that moved is compared where it is now); a setting the copy lacks (one selfplay gained
after the checkpoint was written) must hold the schema's default, so an older run folder still
resumes. A setting that differs is named beside its two values.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from selfplay.core.config.learners import LearnerConfig
from selfplay.core.config.run import RunConfig
from selfplay.core.config.sections import ColdStartConfig, LoraConfig, TrainConfig

RESUMABLE = (
    "iterations",
    "minutes",
    "threads",
    "loggers",
    "logger_options",
    "train.micro_batch_tokens",
    "train.micro_batch_size",
    "train.lr_decay_iterations",
)
NOT_TRAINING = ("resume", "out", "name", "recipe", "eval")

MISSING: Any = object()


def resumable(key: str) -> bool:
    """Whether a resume may change the setting ``key`` (dotted; a learner's own micro-batch
    budget, ``learners.NAME.train.micro_batch_tokens``, included)."""
    parts = key.split(".")
    if parts[0] == "learners" and len(parts) > 2:
        parts = parts[2:]
    return any(".".join(parts[:n]) in RESUMABLE for n in range(1, len(parts) + 1))


def resumed(saved: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """``{KEY: value now}`` (dotted) for every setting a resume may change that ``now`` holds
    otherwise than the run folder's ``saved`` config.yaml (both as JSON): what a resume was
    given, which config.yaml then records and a resume command after a stop repeats."""
    found: dict[str, Any] = {}
    _walk_resumable(saved, now, "", found)
    return found


def _walk_resumable(saved: Any, now: dict[str, Any], prefix: str, found: dict[str, Any]) -> None:
    for key, new in now.items():
        path = f"{prefix}{key}"
        old = saved.get(key, MISSING) if isinstance(saved, dict) else MISSING
        if resumable(path):
            if old != new:
                found[path] = new
        elif isinstance(new, dict):
            _walk_resumable(old, new, f"{path}.", found)


def differences(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """``KEY: SAVED in the checkpoint, NOW now`` for every setting that shapes training and
    differs between the checkpoint's copy ``saved`` and a resume's ``now`` (both as JSON)."""
    found: list[str] = []
    _walk(_as_now(saved), now, defaults(), "", found)
    return found


def _as_now(saved: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint's settings as this selfplay writes them (a setting that moved, such as
    ``train.kl_coef`` to ``objective_options``, where it is now); as they are when they do not
    validate (a setting since removed: it then differs)."""
    try:
        return RunConfig.model_validate(saved).model_dump(mode="json")
    except ValidationError:
        return saved


def defaults() -> dict[str, Any]:
    """Every setting's default, as JSON; a learner's own sections included (a learner that
    sets ``train`` holds the whole train section)."""
    every = RunConfig().model_dump(mode="json")
    learner = LearnerConfig().model_dump(mode="json")
    for key, section in (("train", TrainConfig), ("cold_start", ColdStartConfig)):
        learner[key] = section().model_dump(mode="json")
    learner["lora"] = LoraConfig().model_dump(mode="json")
    every["learners"] = _EachName(learner)
    return every


def default_of(key: str) -> Any:
    """The schema's default of the setting ``key`` (dotted)."""
    value: Any = defaults()
    for part in key.split("."):
        value = value.get(part, MISSING) if isinstance(value, dict) else MISSING
    return value


class _EachName(dict):
    """The defaults of a section keyed by names the user chose (``learners.NAME``): the same
    for every name."""

    def __init__(self, each: dict[str, Any]) -> None:
        super().__init__()
        self.each = each

    def get(self, key: Any, default: Any = None) -> Any:
        return self.each


def _walk(saved: Any, now: Any, default: Any, prefix: str, found: list[str]) -> None:
    for key in sorted(set(saved) | set(now)):
        path = f"{prefix}{key}"
        if (not prefix and key in NOT_TRAINING) or resumable(path):
            continue
        old, new = saved.get(key, MISSING), now.get(key, MISSING)
        under = default.get(key, MISSING) if isinstance(default, dict) else MISSING
        if isinstance(old, dict) and isinstance(new, dict):
            _walk(old, new, under, f"{path}.", found)
        elif old is MISSING:  # a setting added since the checkpoint: at its default, it agrees
            if new != under:
                found.append(f"{path}: (absent) in the checkpoint, {new!r} now")
        elif old != new:
            shown = "(absent)" if new is MISSING else repr(new)
            found.append(f"{path}: {old!r} in the checkpoint, {shown} now")
