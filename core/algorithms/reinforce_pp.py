"""REINFORCE++: returns normalised over the whole batch.

REINFORCE++ (Hu, 2025): no critic and no per-prompt groups; the advantage is the return
standardised with the mean and standard deviation of the global batch (all processes):

    A_i = (R_i - mean(R)) / (std(R) + eps)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from pydantic import Field

from selfplay.api.estimator import Estimator, Reduce, Sample, local, rewards_tensor
from selfplay.api.options import Options


class ReinforcePPOptions(Options):
    eps: float = Field(default=1e-6, gt=0, description="Added to the deviation before dividing.")


class ReinforcePP(Estimator):
    """REINFORCE++: returns normalised over the whole batch (every process's samples)."""

    Options = ReinforcePPOptions
    name = "reinforce++"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.eps = self.options.eps

    def __call__(self, samples: Sequence[Sample], reduce: Reduce = local) -> list[float | None]:
        rewards = rewards_tensor(samples)
        stats = reduce(
            torch.stack([rewards.sum(), (rewards**2).sum(), torch.tensor(len(samples)).double()])
        )
        mean = stats[0] / stats[2]
        std = (stats[1] / stats[2] - mean**2).clamp_min(0).sqrt()
        return ((rewards - mean) / (std + self.eps)).tolist()


class Plain(Estimator):
    """No baseline: the advantage is the return itself (vanilla REINFORCE, Williams 1992)."""

    name = "none"

    def __call__(self, samples: Sequence[Sample], reduce: Reduce = local) -> list[float | None]:
        return [s.reward for s in samples]
