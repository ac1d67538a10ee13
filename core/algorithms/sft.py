"""``sft``: supervised fine-tuning on the samples the run keeps — STaR and expert iteration.

Zelikman et al. 2022, "STaR: Self-Taught Reasoner": generate rationales, keep those whose
final answer is correct, fine-tune on them, repeat. It is filtered imitation, not a policy
gradient: nothing is pushed down, and what is kept is learned as if it were a demonstration.

Which samples are kept (``keep``):
- ``pass``: those whose return is above ``threshold`` (0 by default); with the game's
  verdict or outcome as the reward, the answers judged correct;
- ``top-k``: the ``k`` best of each prompt's samples, when their return is above
  ``threshold`` (best-of-n distillation, expert iteration);
- ``all``: every sample (plain imitation of the policy's own answers).

Rationalisation (``rationalize: true``, STaR's second half): the game gives a failed task one
more, hinted turn (the correct answer shown, ``game_options.rationalize``); a kept hinted
answer is trained under the un-hinted prompt, the one the model will be asked, so the model
learns to reach the answer without the hint. Hinted turns that are not kept are dropped.

Loss: the mean negative log-likelihood of the kept answers' tokens,
    L = -sum_t log pi(y_t | x, y_<t) / sum |y|.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import torch
from pydantic import Field

from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData, Loss, Objective, Scored, UpdateEpochs
from selfplay.api.options import Options
from selfplay.api.tasks import HINTED_TURNS


class SFTOptions(Options):
    update_epochs: UpdateEpochs = 1
    keep: Literal["pass", "top-k", "all"] = Field(
        default="pass", description="Which samples to learn: pass, top-k or all."
    )
    k: int = Field(default=1, ge=1, description="top-k: samples kept per prompt.")
    threshold: float = Field(
        default=0.0, description="pass / top-k: a kept sample's return is above this."
    )
    rationalize: bool = Field(
        default=False,
        description="Hinted retries of failed tasks (STaR's rationalisation), trained under "
        "the un-hinted prompt.",
    )


@dataclass(frozen=True)
class Kept:
    """One sample to imitate."""

    samples: tuple[Sample, ...]


class SFT(Objective):
    """Cross-entropy on kept samples (STaR / expert iteration), hinted ones un-hinted."""

    Options = SFTOptions
    name = "sft"
    needs = "samples"
    # imitation of kept samples: the policy that sampled one does not enter the loss, so a
    # sample of older weights (served, overlapped) is imitated as it is
    stale = "unaffected"
    metric_names = ("nll",)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.counts: dict[str, float] = {}

    def game_options(self) -> dict[str, Any]:
        return {"rationalize": True} if self.options.rationalize else {}

    def prepare(self, data: IterationData) -> list[Kept]:
        hinted = [self._hinted(sample, data) for sample in data.samples]
        kept = [s for s, h in zip(data.samples, hinted, strict=True) if self._keeps(s, h)]
        if self.options.keep == "top-k":
            kept = _top_k([s for s in kept], self.options.k)
        unhinted = _first_prompts(data)
        chosen: list[Kept] = []
        rationales = 0
        for sample in kept:
            if self._hinted(sample, data):
                prompt = unhinted.get((sample.episode, sample.role))
                if prompt is None:
                    continue
                sample = replace(sample, prompt_ids=prompt, group=prompt)
                rationales += 1
            chosen.append(Kept((sample,)))
        counts = {
            "kept": float(len(chosen)),
            "seen": float(len(data.samples) - sum(hinted)),
            "rationales": float(rationales),
        }
        if data.reduce is not None:
            keys = sorted(counts)
            total = data.reduce(torch.tensor([counts[k] for k in keys], dtype=torch.float64))
            counts = dict(zip(keys, total.tolist(), strict=True))
        self.counts = counts
        return chosen

    def _keeps(self, sample: Sample, hinted: bool) -> bool:
        if hinted and not self.options.rationalize:
            return False
        if self.options.keep == "all":
            return not hinted or sample.reward > self.options.threshold
        return sample.reward > self.options.threshold

    @staticmethod
    def _hinted(sample: Sample, data: IterationData) -> bool:
        if not data.episodes:
            return False
        return sample.turn in data.episodes[sample.episode].state.get(HINTED_TURNS, ())

    def loss(self, items: Sequence[Kept], current: Scored, reference: Scored | None) -> Loss:
        mask = current.mask.float()
        nll = -(current.logp * mask).sum() / mask.sum().clamp_min(1.0)
        return Loss(nll, {"nll": nll.item()})

    def iteration_metrics(self) -> dict[str, float]:
        counts = self.counts
        seen = counts.get("seen", 0.0)
        return {
            "sft/kept": counts.get("kept", 0.0),
            "sft/kept_share": counts.get("kept", 0.0) / seen if seen else 0.0,
            "sft/rationales": counts.get("rationales", 0.0),
        }


def _top_k(samples: Sequence[Sample], k: int) -> list[Sample]:
    groups: dict[tuple[int, ...], list[Sample]] = defaultdict(list)
    for sample in samples:
        groups[sample.group].append(sample)
    kept = []
    for members in groups.values():
        kept.extend(sorted(members, key=lambda s: -s.reward)[:k])  # stable: earlier first
    return kept


def _first_prompts(data: IterationData) -> dict[tuple[int, str], tuple[int, ...]]:
    """Per (episode, role): the prompt of its first un-hinted sample, the task as asked."""
    first: dict[tuple[int, str], tuple[int, ...]] = {}
    for sample in data.samples:
        if not SFT._hinted(sample, data):
            first.setdefault((sample.episode, sample.role), sample.prompt_ids)
    return first
