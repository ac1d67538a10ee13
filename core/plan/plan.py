"""A run planned once, before any work: `plan(config) -> RunPlan`.

    plan(config):  the recipe under the user's settings, checked (`resolve`, recipes.py)
                   -> per learner: its own settings and its objective, built once with its
                      options and checked against the run (`bound_objective`)
                   -> the banner's account of the recipe (its line and notes)

The trainer, the learners' assembly and the banner read the plan; none of them asks the
registry for an objective again (tests/test_plan.py counts the constructions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from selfplay.core.config import RunConfig
from selfplay.core.config.learners import learner_config
from selfplay.core.plan.objectives import Objectives, bound_objective
from selfplay.core.plan.recipes import recipe_line, recipe_notes, resolve


@dataclass(frozen=True)
class LearnerPlan:
    """One learner's part of the plan: ``name`` None for the one shared policy."""

    name: str | None
    config: RunConfig  # the run's settings with the learner's own
    objective: Any  # built once, with its settings as options (``objective.options``)


@dataclass(frozen=True)
class RunPlan:
    config: RunConfig  # resolved: what config.yaml records
    learners: tuple[LearnerPlan, ...]
    recipe_line: str  # the banner's line of the recipe's settings ("" without a recipe)
    recipe_notes: tuple[str, ...]  # the recipe settings the objective does not read

    def learner(self, name: str | None) -> LearnerPlan:
        """The plan of the learner ``name`` (None: the shared policy)."""
        return next(learner for learner in self.learners if learner.name == name)


def plan(config: RunConfig) -> RunPlan:
    """The run's plan (see the module doc); a ConfigError names any setting refused."""
    objectives = Objectives()
    config = resolve(config, objectives)
    learners = []
    for name in config.learners or [None]:
        own = learner_config(config, name) if name else config
        objective = bound_objective(own, objectives, learner=name or "")
        learners.append(LearnerPlan(name, own, objective))
    line = recipe_line(config, objectives)
    notes = tuple(recipe_notes(config, objectives))
    return RunPlan(config, tuple(learners), line, notes)
