"""The shared algorithm settings an objective is bound to (`TrainSettings`), and the run's
objective bound to them and checked against the run before any work.
"""

from __future__ import annotations

from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.objective import TRAIN_KEYS, Objective, TrainSettings
from selfplay.core.config import RunConfig
from selfplay.core.config.sections import MOVED
from selfplay.core.plan.objectives import Objectives, refuse_unread_shared


def train_settings(config: RunConfig, objective: Objective) -> TrainSettings:
    """The shared algorithm settings ``objective`` reads, from its options (`Objective.bind`);
    the others keep `TrainSettings`' neutral values."""
    given = config.objective_options
    chosen = {}
    for key in objective.reads() & set(TRAIN_KEYS):
        if key in type(objective.options).model_fields:
            chosen[key] = getattr(objective.options, key)
        else:  # an objective that reads it without declaring it: as the train section had it
            chosen[key] = given.get(key, MOVED[key])
    if "role_lr_scale" in chosen:
        chosen["role_lr_scale"] = dict(chosen["role_lr_scale"])
    rollout = config.rollout
    return TrainSettings(
        **chosen,
        importance_cap=importance_cap(config),
        max_staleness=rollout.max_staleness,
        age_decay=rollout.age_decay if rollout.stale == "reweight" else None,
    )


def importance_cap(config: RunConfig) -> float | None:
    """The cap of the served tokens' importance weight: the setting, else 2.0 when the
    learner's turns are served (their sampler is another copy of the weights), else none."""
    rollout = config.rollout
    if rollout.importance_cap is not None:
        return rollout.importance_cap
    return 2.0 if rollout.served else None


def bound_objective(
    config: RunConfig, objectives: Objectives | None = None, learner: str = ""
) -> Any:
    """The objective ``learner`` trains with (``""``: the shared policy), told its settings
    and checked against the run before any work: a setting it refuses (``legal-pg`` with two
    epochs), one it does not read or a ``generation.choice`` it does not train is a
    ConfigError before the run folder or the model exists. What it does with stale samples
    was checked when the run was resolved (`check_stale`)."""
    objective = (objectives or Objectives()).learner(config, learner)
    refuse_unread_shared(objective, config)
    objective.bind(train_settings(config, objective))
    needed = objective.generation_choice
    if needed is not None and needed != config.generation.choice:
        raise ConfigError(
            f"objective {config.objective!r} trains generation.choice={needed}, but the run "
            f"has generation.choice={config.generation.choice}; add --set "
            f"generation.choice={needed}."
        )
    return objective
