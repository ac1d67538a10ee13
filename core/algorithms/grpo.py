"""Group-relative advantages (GRPO).

DeepSeekMath (Shao et al., 2024), section 4.1: sample several answers to the same prompt and
use the group's mean reward as the baseline, optionally dividing by its standard deviation:

    A_i = (R_i - mean(R_group)) / (std(R_group) + eps)

Groups are the samples of one prompt within one process's batch; a sample alone in its group
has advantage 0 (it carries no relative information).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from selfplay.api.estimator import Estimator, Reduce, Sample, local
from selfplay.api.options import Options


class GRPOOptions(Options):
    scale: bool = Field(default=True, description="Divide by the group's standard deviation.")
    eps: float = Field(default=1e-6, gt=0, description="Added to the deviation before dividing.")


class GRPO(Estimator):
    """Group baseline: each return minus the mean of the samples of the same prompt."""

    Options = GRPOOptions
    name = "grpo"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.scale, self.eps = self.options.scale, self.options.eps

    def __call__(self, samples: Sequence[Sample], reduce: Reduce = local) -> list[float | None]:
        groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for i, sample in enumerate(samples):
            groups[sample.group].append(i)
        advantages: list[float | None] = [0.0] * len(samples)
        for members in groups.values():
            rewards = [samples[i].reward for i in members]
            mean = sum(rewards) / len(rewards)
            std = (sum((r - mean) ** 2 for r in rewards) / len(rewards)) ** 0.5
            for i in members:
                advantage = samples[i].reward - mean
                advantages[i] = advantage / (std + self.eps) if self.scale else advantage
        return advantages
