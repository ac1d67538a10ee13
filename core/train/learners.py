"""The policies a run trains: one shared policy, or one learner per group of roles.

A learner is built in two steps, each whole: `LearnerParts` is what its plan builds (its policy,
objective, estimator and search targets, and the run's settings with its own:
core/config/learners.py), and a `Learner` is those parts set up to train (its model on the device
and the optimiser, reference and updater around it); core/run/model_setup.py makes both. The
shared policy (named ``learner``) plays every role; a learner of its own plays only its roles,
and its turns are recorded under its seat-holder name ``learner:NAME``, so each learner trains
on its own turns only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import torch

from selfplay.api.estimator import IN_PROCESS, Estimator, Sampling
from selfplay.api.objective import Objective
from selfplay.api.policy import Policy
from selfplay.api.sampler import learner_seat
from selfplay.api.types import Role
from selfplay.core.config import RunConfig
from selfplay.core.train.search_targets import SearchTargets
from selfplay.core.train.update.reference import Reference
from selfplay.core.train.update.updater import Updater


@dataclass
class LearnerParts:
    """One policy to be trained and what its plan builds around it."""

    name: str  # its seat-holder name: ``learner`` for the shared policy
    roles: tuple[Role, ...]
    config: RunConfig  # the run's settings with the learner's own
    policy: Policy
    objective: Objective
    estimator: Estimator
    search: SearchTargets
    every: int = 1  # updated every n-th iteration
    sampling: Sampling = IN_PROCESS  # how its turns are sampled (served, staleness cap, age)
    kl_coef: float = 0.0  # where the KL schedule starts: its objective's as planned

    @property
    def seat(self) -> str:
        """Its seat-holder name: ``learner``, or ``learner:NAME`` beside other learners."""
        return learner_seat(self.name)

    def trains(self, iteration: int) -> bool:
        return iteration % self.every == 0


@dataclass
class Learner(LearnerParts):
    """One policy being trained and everything it is trained with: its parts, set up."""

    # Fabric's wrappers (``model.module`` is the plain model the policy generates with)
    model: torch.nn.Module = field(kw_only=True)
    optimizer: torch.optim.Optimizer = field(kw_only=True)
    reference: Reference = field(kw_only=True)
    updater: Updater = field(kw_only=True)

    @classmethod
    def set_up(cls, parts: LearnerParts, **training) -> Learner:
        """``parts`` with what trains them: ``model``, ``optimizer``, ``reference``, ``updater``."""
        return cls(**{f.name: getattr(parts, f.name) for f in fields(parts)}, **training)


def seat_holder(learners: Sequence[Learner], role: Role) -> str:
    """The name of the learner that plays ``role``."""
    for learner in learners:
        if role in learner.roles:
            return learner.seat
    raise KeyError(role)


def policies(learners: Sequence[Learner]) -> dict[str, Policy]:
    """Each learner's policy by its seat-holder name."""
    return {learner.seat: learner.policy for learner in learners}
