"""``dpo``: Direct Preference Optimisation on pairs the run forms from its own samples.

Rafailov et al. 2023, "Direct Preference Optimization: Your Language Model is Secretly a
Reward Model"; the pairs and the moving reference are those of Self-Rewarding Language Models
(Yuan et al. 2024) and, with ``chosen: reference``, of SPIN (Chen et al. 2024).

Pairs. The samples of one prompt (``Sample.group``) are ranked by their return (the run's
rewards: a judge's 0-5 score, a verifier's verdict); the highest and the lowest form one pair
(y_w, y_l) when their returns differ by more than ``margin``. Ties and one-sample groups form
none. With ``chosen: reference`` (SPIN) the chosen side is instead the game's reference answer
to the prompt, and every learner answer that differs from it is a rejected side.

The loss of a pair, with h(y) = log pi(y|x) - log pi_ref(y|x) summed over y's tokens:

    delta   = h(y_w) - h(y_l)
    sigmoid = -log sigmoid(beta * delta)           DPO
    ipo     = (delta - 1 / (2 * beta)) ** 2         IPO (Azar et al. 2023)
    hinge   = max(0, 1 - beta * delta)              SLiC-HF (Zhao et al. 2023)

The reference is the policy at the start of each iteration, the iterate M_t both papers
anchor to (``reference: iteration``), or the policy the cold start left (``initial``). Logged:
the pairs formed and skipped, the mean margin delta, the reward accuracy (the share of pairs
whose implicit reward beta * h ranks the chosen side higher) and, for every other reward term,
how often it agrees with the pair's ranking (``pairs/agree/<term>``, when the reward has
several terms: e.g. a verifier's verdict against a self-judge's score).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData, Loss, Objective, Scored, UpdateEpochs
from selfplay.api.options import Options


class DPOOptions(Options):
    update_epochs: UpdateEpochs = 1
    loss: Literal["sigmoid", "ipo", "hinge"] = Field(
        default="sigmoid", description="sigmoid (DPO), ipo or hinge (SLiC)."
    )
    beta: float = Field(default=0.1, gt=0, description="Strength of the pull to the reference.")
    margin: float = Field(
        default=0.0, ge=0, description="Least difference in return that makes a pair."
    )
    chosen: Literal["best", "reference"] = Field(
        default="best",
        description="best: the highest-return sample; reference: the game's reference answer "
        "(SPIN).",
    )
    reference: Literal["iteration", "initial"] = Field(
        default="iteration",
        description="The reference policy: the policy at the start of each iteration (M_t) or "
        "the one the cold start left.",
    )


@dataclass(frozen=True)
class Pair:
    """One preference: ``samples`` is (chosen, rejected), under the same prompt."""

    samples: tuple[Sample, Sample]


def pair_loss(
    delta: torch.Tensor, beta: float, kind: Literal["sigmoid", "ipo", "hinge"]
) -> torch.Tensor:
    """The per-pair loss of the margins ``delta = h(y_w) - h(y_l)`` (see the module doc)."""
    if kind == "sigmoid":
        return -F.logsigmoid(beta * delta)
    if kind == "ipo":
        return (delta - 1 / (2 * beta)) ** 2
    return torch.relu(1 - beta * delta)


class DPO(Objective):
    """Direct preference optimisation on best-vs-worst pairs of each prompt (or SPIN's)."""

    Options = DPOOptions
    name = "dpo"
    needs = "samples"
    # DPO's loss reads the policy and the reference, never the policy that sampled the pair,
    # so a pair of older weights (served, overlapped) is a preference pair like any other
    stale = "unaffected"
    metric_names = ("margin", "reward_accuracy", "chosen_reward", "rejected_reward")

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.counts: dict[str, float] = {}

    def refreshes_reference(self) -> bool:
        return self.options.reference == "iteration"

    def wants_reference(self) -> bool:
        return True

    def weight(self, items: Sequence[Any]) -> float:
        return float(len(items))  # the loss is a mean over pairs

    def prepare(self, data: IterationData) -> list[Pair]:
        groups: dict[tuple[int, ...], list[Sample]] = defaultdict(list)
        for sample in data.samples:
            groups[sample.group].append(sample)
        if self.options.chosen == "reference":
            pairs, counts = self._against_references(groups, data)
        else:
            pairs, counts = self._best_against_worst(groups, data.terms)
        self.counts = _reduced(counts, data)
        return pairs

    def _best_against_worst(self, groups, terms) -> tuple[list[Pair], dict[str, float]]:
        pairs: list[Pair] = []
        counts = dict.fromkeys(("formed", "ties", "singletons", "below_margin"), 0.0)
        for members in groups.values():
            if len(members) < 2:
                counts["singletons"] += 1
                continue
            best = max(members, key=lambda s: s.reward)  # the first of equals
            worst = min(members, key=lambda s: s.reward)
            gap = best.reward - worst.reward
            if gap == 0:
                counts["ties"] += 1
            elif gap <= self.options.margin:
                counts["below_margin"] += 1
            else:
                pairs.append(Pair((best, worst)))
        counts["formed"] = float(len(pairs))
        if len(terms) > 1:
            counts.update(_agreement(pairs, terms))
        return pairs, counts

    def _against_references(self, groups, data) -> tuple[list[Pair], dict[str, float]]:
        if data.reference is None or data.encode is None:
            raise ConfigError(
                "objective_options.chosen=reference (SPIN) needs a game that knows each task's "
                "reference answer (e.g. math-solver) and a learner with a tokenizer."
            )
        pairs: list[Pair] = []
        counts = dict.fromkeys(("formed", "no_reference", "same_as_reference"), 0.0)
        for members in groups.values():
            text = data.reference(members[0])
            if text is None:
                counts["no_reference"] += 1
                continue
            chosen = replace(members[0], token_ids=data.encode(text), logprobs=())
            for sample in members:
                if sample.token_ids == chosen.token_ids:
                    counts["same_as_reference"] += 1
                else:
                    pairs.append(Pair((chosen, sample)))
        counts["formed"] = float(len(pairs))
        return pairs, counts

    def loss(self, items: Sequence[Pair], current: Scored, reference: Scored | None) -> Loss:
        if reference is None:
            raise ConfigError("dpo needs a reference policy; this run keeps none.")
        h = ((current.logp - reference.logp) * current.mask).sum(-1)  # one per row
        chosen, rejected = h[0::2], h[1::2]  # rows come item by item: (chosen, rejected)
        delta = chosen - rejected
        beta = self.options.beta
        loss = pair_loss(delta, beta, self.options.loss).mean()
        with torch.no_grad():
            metrics = {
                "margin": delta.mean().item(),
                "reward_accuracy": (delta > 0).float().mean().item(),
                "chosen_reward": (beta * chosen).mean().item(),
                "rejected_reward": (beta * rejected).mean().item(),
            }
        return Loss(loss, metrics)

    def iteration_metrics(self) -> dict[str, float]:
        return {f"pairs/{key}": value for key, value in self.counts.items()}


def _agreement(pairs: Sequence[Pair], terms: Sequence[str]) -> dict[str, float]:
    """Per reward term: the pairs whose own share also prefers y_w (a tie counts half)."""
    agree = {f"agree/{term}": 0.0 for term in terms}
    for pair in pairs:
        chosen, rejected = pair.samples
        for term in terms:
            a, b = chosen.parts.get(term, 0.0), rejected.parts.get(term, 0.0)
            agree[f"agree/{term}"] += 1.0 if a > b else 0.5 if a == b else 0.0
    return agree


def _reduced(counts: dict[str, float], data: IterationData) -> dict[str, float]:
    """Counts summed over every process; agreements as shares of the pairs formed."""
    keys = sorted(counts)
    if data.reduce is not None:
        total = data.reduce(torch.tensor([counts[k] for k in keys], dtype=torch.float64))
        counts = dict(zip(keys, total.tolist(), strict=True))
    formed = counts.get("formed", 0.0)
    return {
        key: (value / formed if formed else 0.0) if key.startswith("agree/") else value
        for key, value in counts.items()
    }
