"""The run's settings: the config schema, a room of its own (core/config/).

`RunConfig` (run.py) holds every setting of a run; its sections live in sections.py
(generation, train, cold start, eval, hardware, LoRA, pool), rollout.py (served rollouts,
branching) and learners.py (a learner of its own per group of roles). Import them from here.
"""

from selfplay.core.config.learners import LearnerConfig
from selfplay.core.config.rollout import BranchConfig, RolloutConfig
from selfplay.core.config.run import RunConfig
from selfplay.core.config.sections import (
    ColdStartConfig,
    EvalConfig,
    GenerationConfig,
    HardwareConfig,
    LoraConfig,
    PoolConfig,
    TrainConfig,
)

__all__ = [
    "BranchConfig",
    "ColdStartConfig",
    "EvalConfig",
    "GenerationConfig",
    "HardwareConfig",
    "LearnerConfig",
    "LoraConfig",
    "PoolConfig",
    "RolloutConfig",
    "RunConfig",
    "TrainConfig",
]
