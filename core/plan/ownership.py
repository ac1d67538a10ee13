"""Who owns a setting: the objective that reads it, or every run.

An objective owns its settings (`Objective.reads`): a setting it does not read would do
nothing, so one the user gave is refused, naming the objective (core/plan/checks.py), and one a
recipe gave is left out and named in the run's banner (core/plan/recipes.py). `OWNED` says
which config keys belong to which of the objective's settings.
"""

from __future__ import annotations

from typing import Any

from selfplay.api.objective import TRAIN_KEYS
from selfplay.core.config import RunConfig
from selfplay.core.plan.objectives import Objectives

# config keys whose effect belongs to an objective's setting -> the `Objective.reads` name that
# uses them ("advantages": read by every objective that needs advantages). The shared
# algorithm settings are the objective's own options; the train keys that schedule or move the
# KL reference go with kl_coef.
OWNED = {
    **{f"objective_options.{key}": key for key in TRAIN_KEYS},
    "train.kl_coef_step": "kl_coef",
    "train.kl_coef_max": "kl_coef",
    "train.kl_coef_min": "kl_coef",
    "train.reference_update": "kl_coef",
    "train.search_weight": "advantages",
    "estimator": "advantages",
    "estimator_options": "advantages",
}


def owner(key: str) -> str | None:
    """The `Objective.reads` name that a dotted config key belongs to (None: every run's)."""
    for owned, name in OWNED.items():
        if key == owned or key.startswith(owned + "."):
            return name
    return None


def reads(objective: Any) -> frozenset[str]:
    """What ``objective`` reads, with "advantages" when it needs them."""
    names = set(objective.reads())
    if objective.needs == "advantages":
        names.add("advantages")
    return frozenset(names)


def unread_settings(objective: Any, settings: dict[str, Any]) -> set[str]:
    """The keys of ``settings`` (dotted) that belong to a setting ``objective`` does not read."""
    read = reads(objective)
    return {key for key in settings if (name := owner(key)) is not None and name not in read}


def asked_objective(config: RunConfig, objectives: Objectives | None = None) -> Any:
    """The run's objective, to ask what it reads (the shared settings it is given are checked
    against that answer): the one ``objectives`` built, else a fresh one."""
    return (objectives or Objectives()).asked(config)
