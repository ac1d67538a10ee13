"""One policy update: minibatches of samples → loss → backward → clipped step.

Reads like the algorithm: score the actions under the current policy (and the reference, when
a KL pull is asked for), form the clipped policy-gradient loss, step. A non-finite loss is
skipped (no step) and reported, so the loop can stop after several in a row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from selfplay.api.estimator import Sample
from selfplay.core.algorithms.policy_gradient import LossTerms, policy_gradient_loss, score
from selfplay.core.config import ConfigError, TrainConfig


@dataclass
class UpdateStats:
    steps: int = 0
    skipped: int = 0  # minibatches whose loss was not finite
    tokens: int = 0
    loss: float = 0.0
    policy: float = 0.0
    kl: float = 0.0
    entropy: float = 0.0
    clip_fraction: float = 0.0
    grad_norm: float = 0.0

    def add(self, terms, grad_norm: float, tokens: int) -> None:
        self.steps += 1
        self.tokens += tokens
        for name in ("policy", "kl", "entropy", "clip_fraction"):
            setattr(self, name, getattr(self, name) + getattr(terms, name))
        self.loss += terms.loss.item()
        self.grad_norm += grad_norm

    def means(self) -> dict[str, float]:
        n = max(self.steps, 1)
        names = ("loss", "policy", "kl", "entropy", "clip_fraction", "grad_norm")
        row = {name: getattr(self, name) / n for name in names}
        row.update(update_steps=self.steps, skipped_steps=self.skipped, train_tokens=self.tokens)
        return row


class NonFiniteLoss(RuntimeError):
    """Several losses in a row were NaN or infinite; the run stops on its last good checkpoint."""


MAX_NONFINITE_IN_A_ROW = 3


@dataclass
class Updater:
    """Holds what every update needs; ``reference`` yields a context scoring the reference."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    config: TrainConfig
    pad_id: int
    backward: Callable[[torch.Tensor], None]
    clip_gradients: Callable[..., torch.Tensor]  # Fabric.clip_gradients(module, opt, max_norm=)
    reference: Callable[[], AbstractContextManager] | None = None
    reference_model: torch.nn.Module | None = None
    temperature: float = 1.0
    role_context: Callable[[str], AbstractContextManager] | None = None
    nonfinite_streak: int = 0

    def update(
        self,
        samples: Sequence[Sample],
        advantages: Sequence[float],
        generator: torch.Generator,
        minibatches: int,
    ) -> UpdateStats:
        """``update_epochs`` passes, each in ``minibatches`` nearly equal parts.

        The number of minibatches is given rather than derived, because under DDP every
        process must take the same number of optimiser steps.
        """
        stats = UpdateStats()
        if not samples or minibatches < 1:
            return stats
        self.model.train()
        epochs = self.config.update_epochs
        for _ in range(epochs):
            for part in _length_grouped(samples, minibatches, generator):
                batch = [samples[i] for i in part]
                batch_adv = [advantages[i] for i in part]
                self._step(batch, batch_adv, stats, fresh=epochs == 1)
        self.model.eval()
        return stats

    def _step(
        self, batch: list[Sample], advantages: list[float], stats: UpdateStats, fresh: bool
    ) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        groups = self._role_groups(batch)
        tokens = sum(len(s.token_ids) for s in batch)
        parts: list[tuple[LossTerms, float]] = []
        for role, index in groups:
            context = self.role_context(role) if self.role_context else nullcontext()
            with context:
                part = [batch[i] for i in index]
                terms = self._terms(part, [advantages[i] for i in index], fresh)
                share = sum(len(batch[i].token_ids) for i in index) / tokens
                if not math.isfinite(terms.loss.item()):
                    self._nonfinite(stats)
                    return
                self.backward(terms.loss * share)
            parts.append((terms, share))
        self.nonfinite_streak = 0
        norm = self.clip_gradients(self.model, self.optimizer, max_norm=self.config.max_grad_norm)
        self.optimizer.step()
        stats.add(_weighted(parts), float(norm), tokens)

    def _role_groups(self, batch: list[Sample]) -> list[tuple[str | None, list[int]]]:
        """One group per role when roles have their own adapters, else the whole batch."""
        if self.role_context is None:
            return [(None, list(range(len(batch))))]
        roles = sorted({s.role for s in batch})
        return [(r, [i for i, s in enumerate(batch) if s.role == r]) for r in roles]

    def _terms(self, batch: list[Sample], advantages: list[float], fresh: bool) -> LossTerms:
        prompts = [s.prompt_ids for s in batch]
        actions = [s.token_ids for s in batch]
        # the reference first: under LoRA it may swap adapter weights in and out
        ref_logp = self._reference_logp(prompts, actions)
        current = score(self.model, prompts, actions, self.pad_id, self.temperature)
        device = current.logp.device
        if fresh:  # one epoch: the rollout policy is the current one; ratio exactly 1
            old = current.logp.detach()
        else:
            old = _padded([s.logprobs for s in batch], current.logp.shape).to(device)
        scale = self.config.role_lr_scale
        weights = [scale.get(s.role, 1.0) for s in batch]
        return policy_gradient_loss(
            current,
            old,
            torch.tensor(advantages, dtype=torch.float32, device=device),
            torch.tensor(weights, dtype=torch.float32, device=device),
            clip=self.config.clip,
            ref_logp=ref_logp,
            kl_coef=self.config.kl_coef,
            entropy_coef=self.config.entropy_coef,
        )

    def _nonfinite(self, stats: UpdateStats) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        stats.skipped += 1
        self.nonfinite_streak += 1
        if self.nonfinite_streak >= MAX_NONFINITE_IN_A_ROW:
            raise NonFiniteLoss(
                f"{self.nonfinite_streak} non-finite losses in a row; stopping. Lower "
                "train.lr or set train.max_grad_norm, and check the rewards are finite."
            )

    def _reference_logp(self, prompts, actions) -> torch.Tensor | None:
        if self.config.kl_coef <= 0:
            return None
        if self.reference_model is not None:
            model, context = self.reference_model, nullcontext()
        elif self.reference is not None:
            model, context = self.model, self.reference()
        else:
            return None
        with torch.no_grad(), context:
            return score(model, prompts, actions, self.pad_id, self.temperature, False).logp


def _length_grouped(
    samples: Sequence[Sample], parts: int, generator: torch.Generator
) -> list[list[int]]:
    """Shuffled minibatches of samples of similar length, in shuffled order.

    Rows are padded to the longest in their minibatch, and a few long prompts (a retry
    carries the reason of the invalid move) would otherwise triple the cost of every
    minibatch they land in. Ties in length keep the random order.
    """
    order = torch.randperm(len(samples), generator=generator).tolist()
    order.sort(key=lambda i: len(samples[i].prompt_ids) + len(samples[i].token_ids))
    n = len(order)
    groups = [order[k * n // parts : (k + 1) * n // parts] for k in range(parts)]
    return [groups[k] for k in torch.randperm(parts, generator=generator).tolist()]


def _weighted(parts: list[tuple[LossTerms, float]]) -> LossTerms:
    """Token-weighted statistics over role groups (one group unless roles have adapters)."""
    if len(parts) == 1:
        return parts[0][0]
    mean = {
        name: sum(getattr(terms, name) * share for terms, share in parts)
        for name in ("policy", "kl", "entropy", "clip_fraction")
    }
    loss = sum(terms.loss.detach() * share for terms, share in parts)
    return LossTerms(loss=loss, **mean)


def _padded(rows: Sequence[Sequence[float]], shape: torch.Size) -> torch.Tensor:
    out = torch.zeros(shape)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row, dtype=torch.float32)
    return out


@torch.no_grad()
def pull_reference(reference: torch.nn.Module, model: torch.nn.Module, rate: float) -> None:
    """``reference <- (1 - rate) * reference + rate * model``, parameter by parameter.

    With a KL pull toward it, a reference that trails the policy slowly is the "magnet" of
    magnetic mirror descent (Sokota et al., 2023), which converges in the last iterate of
    two-player zero-sum games where a frozen or absent reference cycles.
    """
    for ref, current in zip(reference.parameters(), model.parameters(), strict=True):
        ref.lerp_(current.detach(), rate)


def check_reference(config: Any) -> None:
    """Refuse reference set-ups that cannot work, before any training time is spent."""
    if config.train.reference_update and config.lora.enabled:
        raise ConfigError(
            "train.reference_update moves a copy of the weights, but under LoRA the "
            "reference is the cold start's adapter weights; set train.reference_update=0."
        )
