"""The policies a run trains: one shared policy, or one learner per group of roles.

A `Learner` bundles what is per-policy: its model and the optimiser, reference and updater set up
around it, its objective, estimator and search targets, and the run's settings with its own
(core/config/learners.py); core/run/model_setup.py builds and sets them up. The shared policy
(named ``learner``) plays every role; a learner of its own plays only its roles, and its turns
are recorded under its seat-holder name ``learner:NAME``, so each learner trains on its own
turns only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from selfplay.api.estimator import IN_PROCESS, Estimator, Sampling
from selfplay.api.objective import Objective
from selfplay.api.policy import Policy
from selfplay.api.sampler import learner_seat
from selfplay.api.types import Role
from selfplay.core.config import RunConfig
from selfplay.core.train.search_targets import SearchTargets


@dataclass
class Learner:
    """One policy being trained and everything it is trained with."""

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
    # set up by core/run/model_setup.py (Fabric's wrappers; ``model.module`` is the plain model)
    model: Any = None
    optimizer: Any = None
    reference: Any = None
    updater: Any = None

    @property
    def seat(self) -> str:
        """Its seat-holder name: ``learner``, or ``learner:NAME`` beside other learners."""
        return learner_seat(self.name)

    def trains(self, iteration: int) -> bool:
        return iteration % self.every == 0


def seat_holder(learners: Sequence[Learner], role: Role) -> str:
    """The name of the learner that plays ``role``."""
    for learner in learners:
        if role in learner.roles:
            return learner.seat
    raise KeyError(role)


def policies(learners: Sequence[Learner]) -> dict[str, Policy]:
    """Each learner's policy by its seat-holder name."""
    return {learner.seat: learner.policy for learner in learners}
