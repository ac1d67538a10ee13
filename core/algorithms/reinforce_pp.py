"""REINFORCE++: returns normalised over the whole batch.

REINFORCE++ (Hu, 2025): no critic and no per-prompt groups; the advantage is the return
standardised with the mean and standard deviation of the global batch (all processes):

    A_i = (R_i - mean(R)) / (std(R) + eps)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from selfplay.api.estimator import Estimator, Reduce, Sample, local, rewards_tensor


class ReinforcePP(Estimator):
    def __init__(self, eps: float = 1e-6) -> None:
        self.eps = eps

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

    def __call__(self, samples: Sequence[Sample], reduce: Reduce = local) -> list[float | None]:
        return [s.reward for s in samples]
