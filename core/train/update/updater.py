"""One policy update: minibatches of items -> the objective's loss -> backward -> clipped step.

Reads like the algorithm: score the items' samples under the reference (when the objective
reads it) and under the current policy, let the objective form its loss, step. The objective
(``pg`` by default, see core/algorithms/) never calls the model, so LoRA adapters per role,
DDP and DeepSpeed work the same for every objective. A non-finite loss is skipped (no step)
and reported, so the loop can stop after several in a row.

Rows that share a prompt (a legal move's menu, a GRPO group's completions) or a preamble
(the rules every turn opens with) are scored with the shared part read once, for the policy
with gradients and for the reference without (`score_shared`, core/models/prefix_scoring.py:
the same values and gradients as a row per sample, to float rounding); ``share_prefixes=False``
scores a row per sample.

Micro-batches bound the memory of a step: a minibatch is scored and back-propagated a few items
at a time (``train.micro_batch_tokens`` padded tokens each, packed in order, a shared prompt
counted once and each row's copy of its cache at its share of a token; by default bytes, from
the model's width, depth, heads and vocabulary, answer logits included, by `TokenBudget`; or
``train.micro_batch_size`` items; core/train/update/micro_batches.py, where the preamble the
micro-batches share is also held for the step and run once), each loss weighted by its share of
the minibatch's `Objective.weight` (answer tokens, or DPO's pairs), and the gradients add up to
the whole minibatch's before the one optimiser step. Under DDP only the last backward pass of a
step synchronises gradients, so processes whose minibatches split differently still meet in the
same collective; and since DDP averages gradients over processes, each loss is scaled by
``processes * mine / everyone's`` weight, so the step is the mean over every process's
minibatch, as one process would take it over all of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from selfplay.api.errors import blame
from selfplay.api.objective import Loss, Objective, Scored
from selfplay.core.models.prefix_scoring import can_share, score_shared
from selfplay.core.models.scoring import score
from selfplay.core.train.update.averaging import WeightAverage
from selfplay.core.train.update.micro_batches import (
    HeldPreamble,
    StepPreambles,
    TokenBudget,
    by_preamble,
    distinct_rows,
    dropout_runs,
    hold,
    pack_by_tokens,
)
from selfplay.core.train.update.reference import Reference
from selfplay.core.train.update.stats import UpdateStats, mismatch, weighted


class NonFiniteLoss(RuntimeError):
    """Several losses in a row were NaN or infinite; the run stops on its last good checkpoint."""


MAX_NONFINITE_IN_A_ROW = 3


@dataclass
class Updater:
    """Holds what every update needs; ``role_context(role)`` switches per-role adapters."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    objective: Objective
    pad_id: int
    backward: Callable[[torch.Tensor], None]
    clip_gradients: Callable[..., torch.Tensor]  # Fabric.clip_gradients(module, opt, max_norm=)
    max_grad_norm: float = 1.0
    epochs: int = 1
    reference: Reference | None = None
    temperature: float = 1.0
    role_context: Callable[[str], Any] | None = None
    micro_batch_size: int | None = None  # items per backward pass; None: by tokens, or whole
    micro_batch_tokens: TokenBudget | None = None  # the size of a backward pass; None: whole
    # ``no_sync(True)``: a context in which a backward pass does not synchronise gradients
    no_sync: Callable[[bool], AbstractContextManager[Any]] | None = None
    processes: int = 1
    reduce: Callable[[torch.Tensor], torch.Tensor] | None = None  # sum over processes
    nonfinite_streak: int = 0
    average: WeightAverage | None = None  # folded in after every update (train.weight_average)
    # served rollouts: the gap between the server's and the trainer's log-probabilities of the
    # sampled tokens, measured on the update's first micro-batch (None: not measured)
    measure_mismatch: bool = False
    mismatch: dict[str, float] | None = None
    # before the first backward pass of a step of several, and after each but the last:
    # hands freed memory back, and large blocks too from then on (core/machine/memory.py)
    release: Callable[[], None] | None = None
    # rows sharing a prompt or preamble read it once (prefix_scoring.py); False: a row each
    share_prefixes: bool = True
    # equal rows (prompt and answer) scored once (`distinct_rows`); None: wherever no
    # dropout runs in the update, where equal rows have equal scores
    score_equal_once: bool | None = None

    def update(
        self, items: Sequence[Any], generator: torch.Generator, minibatches: int
    ) -> UpdateStats:
        """``epochs`` passes over ``items``, each in ``minibatches`` nearly equal parts.

        The number of minibatches is given rather than derived, because under DDP every
        process must take the same number of optimiser steps.
        """
        stats = UpdateStats(names=self.objective.metric_names)
        self.mismatch = {} if self.measure_mismatch else None
        if not items or minibatches < 1:
            return stats
        self.model.train()
        for _ in range(self.epochs):
            for part in _length_grouped(items, minibatches, generator):
                self._step([items[i] for i in part], stats)
        self.model.eval()
        if self.average is not None:
            self.average.update()
        stats.extra.update(self.mismatch or {})
        return stats

    def averaged(self) -> AbstractContextManager[Any]:
        """The weight average in place for a ``with`` block (the weights when there is none)."""
        return self.average.applied() if self.average is not None else nullcontext()

    def _step(self, batch: list[Any], stats: UpdateStats) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        weight = self.objective.weight
        total = weight(batch)
        scale = self._process_scale(total)
        planned = [
            (role, micro, held)
            for role, group in self._role_groups(batch)
            for micro, held in self._micro_batches(group)
        ]
        passes = [(role, micro) for role, micro, _ in planned]
        preambles = StepPreambles(self, passes, [held for _, _, held in planned])
        parts: list[tuple[Loss, float]] = []
        if self.release is not None and len(passes) > 1:
            # from the first pass on: the first one's blocks freed to glibc's heap, not handed
            # back, added about 200 MB to the peak (RESULTS.md, "Margin under the 1.0 GB target")
            self.release()
        for k, (role, micro) in enumerate(passes):
            context = self.role_context(role) if self.role_context else nullcontext()
            with context, self._sync(last=k == len(passes) - 1):  # around forward and backward
                result = self._loss(micro, preambles, k)
                share = weight(micro) / total if total else 1.0 / len(passes)
                if not math.isfinite(result.loss.item()):
                    preambles.drop()
                    self._nonfinite(stats)
                    return
                self.backward(result.loss * (share * scale))
                preambles.after(k)
            parts.append((result, share))
            if self.release is not None and k < len(passes) - 1:
                self.release()
        self.nonfinite_streak = 0
        norm = self.clip_gradients(self.model, self.optimizer, max_norm=self.max_grad_norm)
        self.optimizer.step()
        stats.add(weighted(parts, stats.names), float(norm), sum(_tokens(i) for i in batch))

    def _process_scale(self, total: float) -> float:
        """``processes * total / sum of every process's total``; 1 in one process."""
        if self.processes == 1 or self.reduce is None:
            return 1.0
        everyone = float(self.reduce(torch.tensor([total], dtype=torch.float64))[0])
        return self.processes * total / everyone if everyone else 1.0

    def _micro_batches(self, group: list[Any]) -> list[tuple[list[Any], int]]:
        """``group``'s micro-batches, each with the preamble held for it (micro_batches.py):
        where a part of the group shares one and needs two micro-batches or more."""
        parts = by_preamble(group) if self._holds() else []
        planned = [(part, n, self._packed(part, n) if n else []) for part, n in parts]
        if not any(len(micro) > 1 for _, _, micro in planned):
            return [(micro, 0) for micro in self._packed(group, 0)]
        out = []
        for part, length, micro in planned:  # each part packed once with its preamble held
            if len(micro) < 2:
                micro, length = self._packed(part, 0), 0
            out += [(m, length) for m in micro]
        return out

    def _packed(self, group: list[Any], held: int) -> list[list[Any]]:
        if self.micro_batch_size or not self.micro_batch_tokens:
            size = self.micro_batch_size or len(group)
            return [group[k : k + size] for k in range(0, len(group), size)]
        once = self._once()
        if once:  # equal items side by side, so that a micro-batch scores them once
            group = sorted(group, key=_rows_of)
        return pack_by_tokens(group, self.micro_batch_tokens, self._shares(), held, once)

    def _holds(self) -> bool:
        """Whether a step may hold a preamble: in one process, where rows share prefixes."""
        return self.processes == 1 and self.no_sync is None and self._shares()

    def _shares(self) -> bool:
        """Whether rows are scored with shared prefixes read once (the model can be)."""
        return self.share_prefixes and can_share(self.model)

    def _once(self) -> bool:
        """Whether equal rows are scored once (``score_equal_once``)."""
        if self.score_equal_once is None:
            self.score_equal_once = not dropout_runs(self.model)
        return self.score_equal_once

    def _score(self, model, prompts, answers, entropy: bool, preamble=None) -> Scored:
        distinct = distinct_rows(prompts, answers) if self._once() else None
        if distinct is None:
            return self._score_rows(model, prompts, answers, entropy, preamble)
        first, which = distinct
        kinds = self._score_rows(
            model, [prompts[i] for i in first], [answers[i] for i in first], entropy, preamble
        )
        spread = torch.tensor(which, device=kinds.logp.device)
        return Scored(kinds.logp[spread], kinds.entropy[spread], kinds.mask[spread])

    def _score_rows(self, model, prompts, answers, entropy: bool, preamble=None) -> Scored:
        if preamble is not None:
            return score_shared(
                model, prompts, answers, self.pad_id, self.temperature, entropy, preamble
            )
        scorer = score_shared if self.share_prefixes else score
        return scorer(model, prompts, answers, self.pad_id, self.temperature, entropy)

    def _sync(self, last: bool) -> AbstractContextManager[Any]:
        return nullcontext() if last or self.no_sync is None else self.no_sync(True)

    def _role_groups(self, batch: list[Any]) -> list[tuple[str | None, list[Any]]]:
        """One group per role when roles have their own adapters, else the whole batch."""
        if self.role_context is None:
            return [(None, batch)]
        roles = sorted({item.samples[0].role for item in batch})
        return [(r, [item for item in batch if item.samples[0].role == r]) for r in roles]

    def _loss(self, items: list[Any], preambles: StepPreambles, k: int) -> Loss:
        rows = [sample for item in items for sample in item.samples]
        prompts = [s.prompt_ids for s in rows]
        answers = [s.token_ids for s in rows]
        # the reference first: under LoRA it swaps adapter weights in and out
        held = preambles.before(k)
        if held is None:
            reference = self._reference_scores(prompts, answers)
        else:  # scored for every pass of the role before its preamble was made
            reference = preambles.reference(k)
        entropy = self.objective.wants_entropy()
        current = self._score(self.model, prompts, answers, entropy, held)
        if self.mismatch is not None and not self.mismatch:  # before this update's first step
            self.mismatch.update(mismatch(rows, current))
        with blame(f"Objective {self.objective.name!r}, computing the loss of {len(items)} items,"):
            return self.objective.loss(items, current, reference)

    def _reference_scores(self, prompts, answers) -> Scored | None:
        if not self._references():
            return None
        with self.reference.scoring() as model:
            return self._score(model, prompts, answers, False)

    def references_after(self, tokens, passes: dict[int, list[Any]]) -> dict[int, Scored | None]:
        """The reference's scores of each micro-batch of ``passes``, the preamble ``tokens``
        run once for all of them (`StepPreambles`)."""
        if not self._references():
            return {}
        out: dict[int, Scored | None] = {}
        with self.reference.scoring() as model:
            preamble: HeldPreamble | None = hold(model, tokens, trained=False)
            for k, items in passes.items():
                rows = [sample for item in items for sample in item.samples]
                prompts, answers = [s.prompt_ids for s in rows], [s.token_ids for s in rows]
                out[k] = self._score(model, prompts, answers, False, preamble)
        return out

    def _references(self) -> bool:
        wanted = self.objective.wants_reference()
        return bool(wanted and self.reference and self.reference.exists)

    def _nonfinite(self, stats: UpdateStats) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        stats.skipped += 1
        self.nonfinite_streak += 1
        if self.nonfinite_streak >= MAX_NONFINITE_IN_A_ROW:
            raise NonFiniteLoss(
                f"{self.nonfinite_streak} non-finite losses in a row; stopping. Lower "
                "train.lr or set train.max_grad_norm, and check the rewards are finite."
            )


def _rows_of(item: Any) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [(tuple(s.prompt_ids), tuple(s.token_ids)) for s in item.samples]


def _tokens(item: Any) -> int:
    return sum(len(s.token_ids) for s in item.samples)


def _length(item: Any) -> int:
    return sum(len(s.prompt_ids) + len(s.token_ids) for s in item.samples)


def _length_grouped(
    items: Sequence[Any], parts: int, generator: torch.Generator
) -> list[list[int]]:
    """Shuffled minibatches of items of similar length, in shuffled order.

    Rows are padded to the longest in their minibatch, and a few long prompts (a retry
    carries the reason of the invalid move) would otherwise triple the cost of every
    minibatch they land in. Ties in length keep the random order.
    """
    order = torch.randperm(len(items), generator=generator).tolist()
    order.sort(key=lambda i: _length(items[i]))
    n = len(order)
    groups = [order[k * n // parts : (k + 1) * n // parts] for k in range(parts)]
    return [groups[k] for k in torch.randperm(parts, generator=generator).tolist()]
