"""What an update reports: its metrics summed over the optimiser steps (`UpdateStats`, the row
metrics.csv gets), a step's metrics over its backward passes (`weighted`), and, with served
rollouts, the gap between the server's and the trainer's log-probabilities (`mismatch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from selfplay.api.objective import Loss, Scored


@dataclass
class UpdateStats:
    """Sums over the optimiser steps of one update; `means` is what metrics.csv gets.

    Across processes each process logs its own means; process 0's row is what metrics.csv
    holds (the loss of a step is already the mean over every process's minibatch).
    """

    names: tuple[str, ...] = ()  # the objective's metric names, in column order
    steps: int = 0
    skipped: int = 0  # minibatches whose loss was not finite
    tokens: int = 0
    loss: float = 0.0
    grad_norm: float = 0.0
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # steps that reported each metric
    extra: dict[str, float] = field(default_factory=dict)  # logged as they are (rollout/...)

    def add(self, result: Loss, grad_norm: float, tokens: int) -> None:
        self.steps += 1
        self.tokens += tokens
        for name in self.names:
            if name in result.metrics:
                self.sums[name] = self.sums.get(name, 0.0) + result.metrics[name]
                self.counts[name] = self.counts.get(name, 0) + 1
        self.loss += result.loss.item()
        self.grad_norm += grad_norm

    def means(self) -> dict[str, float]:
        """Each metric's mean over the steps that reported it; one no step reported is left
        out of the row (an empty cell), never a made-up 0 (every metric is 0 when no step
        ran, so that an iteration without an update still has its columns)."""
        n = max(self.steps, 1)
        row = {"loss": self.loss / n}
        for name in self.names:
            if not self.steps:
                row[name] = 0.0
            elif name in self.counts:
                count = self.counts[name]
                row[name] = self.sums[name] / (n if count == self.steps else count)
        row["grad_norm"] = self.grad_norm / n
        row.update(update_steps=self.steps, skipped_steps=self.skipped, train_tokens=self.tokens)
        row.update(self.extra)
        return row


def weighted(parts: list[tuple[Loss, float]], names: tuple[str, ...]) -> Loss:
    """Metrics over a step's backward passes (role groups, micro-batches), weighted by share;
    a metric some passes leave out is the mean over the passes that report it."""
    if len(parts) == 1:
        return parts[0][0]
    metrics = {}
    for name in names:
        told = [(result.metrics[name], share) for result, share in parts if name in result.metrics]
        if len(told) == len(parts):
            metrics[name] = sum(value * share for value, share in told)
        elif told:
            metrics[name] = sum(v * s for v, s in told) / (sum(s for _, s in told) or 1.0)
    loss = sum(result.loss.detach() * share for result, share in parts)
    return Loss(loss, metrics)


def mismatch(rows: Sequence[Any], current: Scored) -> dict[str, float]:
    """``rollout/mismatch_kl``, the mean over sampled tokens of log pi_server - log pi_trainer
    (an estimate of KL(server || trainer) on its own samples), and ``rollout/mismatch_max``,
    the largest gap of one token, over the rows that carry the server's log-probabilities."""
    gaps: list[torch.Tensor] = []
    for i, sample in enumerate(rows):
        n = len(sample.logprobs)
        if n and n == len(sample.token_ids):
            served = torch.tensor(sample.logprobs, dtype=torch.float32)
            gaps.append(served - current.logp[i, :n].detach().float().cpu())
    if not gaps:
        return {}
    every = torch.cat(gaps)
    return {
        "rollout/mismatch_kl": float(every.mean()),
        "rollout/mismatch_max": float(every.abs().max()),
    }
