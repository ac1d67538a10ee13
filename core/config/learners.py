"""Several learners in one run: the ``learners`` section of `RunConfig` (core/config/run.py).

With no learners named, one shared policy plays every role. Naming learners gives each group of
roles a model of its own, with its own optimiser, reference, objective, estimator, learning
rate, cold start and update cadence; whatever a learner leaves out it takes from the run's
settings (docs/learners.md)::

    learners:
      proposer: {model: tiny, train: {lr: 5.0e-5}}
      solver: {roles: [solver], model: runs/solver-start, update_every: 2}

`learner_config` gives one learner's settings as a whole `RunConfig`, so everything that builds
and trains the shared policy builds and trains each learner unchanged.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from selfplay.core.config.rollout import server_list
from selfplay.core.config.sections import (
    ColdStartConfig,
    LoraConfig,
    TrainConfig,
    moved_to_objective,
)

if TYPE_CHECKING:
    from selfplay.core.config import RunConfig

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
# seat-holder names a learner may not take (api/sampler.py)
RESERVED = ("learner", "scripted", "snapshot", "openai", "greedy", "lookahead")


class LearnerConfig(BaseModel):
    """One learner: the roles it plays and the settings it holds apart from the run's."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _algorithm_settings(cls, data: Any) -> Any:
        """``train.clip`` and the other moved names, as ``objective_options``."""
        return moved_to_objective(data)

    roles: list[str] = Field(
        default_factory=list,
        description="The roles it plays (default: the one role named like the learner).",
    )
    model: str | None = Field(
        default=None,
        description="Its model, in any form --model takes (default: the run's model).",
    )
    model_options: dict[str, Any] | None = Field(
        default=None,
        description="Its model loader's options (default: the run's when the model is the "
        "run's, else none), e.g. {layers: 2} for tiny.",
    )
    objective: str | None = Field(default=None, description="Its objective (default: the run's).")
    objective_options: dict[str, Any] | None = Field(
        default=None,
        description="Its objective's options (default: the run's; with the run's objective, "
        "over the run's options).",
    )
    estimator: str | None = Field(default=None, description="Its estimator (default: the run's).")
    estimator_options: dict[str, Any] | None = Field(
        default=None, description="Its estimator's options (default: the run's)."
    )
    train: TrainConfig | None = Field(
        default=None,
        description="Keys of the train section it sets apart (the rest are the run's), e.g. "
        "{lr: 5.0e-5, kl_coef: 0}.",
    )
    cold_start: ColdStartConfig | None = Field(
        default=None, description="Keys of the cold_start section it sets apart."
    )
    lora: LoraConfig | None = Field(
        default=None, description="Keys of the lora section it sets apart."
    )
    update_every: int = Field(
        default=1,
        ge=1,
        description="Update every n iterations; in between its turns are played, not trained "
        "(the per-role train.stagger of a shared policy, for a learner of its own).",
    )
    servers: list[str] = Field(
        default_factory=list,
        description="Servers already running that generate its turns (its rollout.servers: "
        "openai:http://HOST:PORT/v1#MODEL, serving its own base model).",
    )
    max_staleness: int | None = Field(
        default=None,
        ge=0,
        description="Its own staleness cap (default: rollout.max_staleness), counted in its "
        "own updates: one that updates every k iterations ages a version per update.",
    )
    stale: Literal["wait", "drop", "reweight"] | None = Field(
        default=None,
        description="Past its cap: wait, drop or reweight its samples (default: rollout.stale).",
    )

    @field_validator("servers", mode="before")
    @classmethod
    def _server_list(cls, value: Any) -> Any:
        return server_list(value)


def learner_roles(name: str, learner: LearnerConfig) -> list[str]:
    return list(learner.roles) or [name]


def learner_config(run: RunConfig, name: str) -> RunConfig:
    """Learner ``name``'s settings as a whole run config: the run's, with the learner's own."""
    learner = run.learners[name]
    data = run.model_dump()
    data["learners"] = {}
    for key in ("model", "objective", "objective_options", "estimator", "estimator_options"):
        if getattr(learner, key) is not None:
            data[key] = getattr(learner, key)
    if learner.objective_options is not None and learner.objective in (None, run.objective):
        # the run's objective: its options, with the learner's own over them (as train's keys)
        data["objective_options"] = {**run.objective_options, **learner.objective_options}
    if learner.model_options is not None:
        data["model_options"] = learner.model_options
    elif learner.model is not None and learner.model != run.model:
        data["model_options"] = {}  # another model's loader may not know the run's options
    for section in ("train", "cold_start", "lora"):
        own = getattr(learner, section)
        if own is not None:
            data[section] = {**data[section], **own.model_dump(exclude_unset=True)}
    if learner.servers:
        data["rollout"]["servers"] = list(learner.servers)
    for key in ("max_staleness", "stale"):
        if getattr(learner, key) is not None:
            data["rollout"][key] = getattr(learner, key)
    return type(run).model_validate(data)


def served(run: RunConfig) -> bool:
    """Whether the run's turns are generated on rollout servers: local workers, the run's
    servers, or (several learners) each learner's own."""
    return run.rollout.served or any(learner.servers for learner in run.learners.values())
