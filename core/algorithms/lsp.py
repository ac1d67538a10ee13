"""Language Self-Play advantages: a GRPO solver and a challenger that wants to stump it.

Language Self-Play for Data-Free Training (Kuba et al., 2025). One model plays a challenger
that writes a question q_i and a solver that answers it G times. With the solver's task reward
R (the judge) and the quality self-reward R_Q (the reference rates the interaction):

    A_sol(q_i, a_ij) = r_ij - mean_j r_ij                    r_ij = R(q_i, a_ij) + R_Q(q_i)
    A_ch(q_i)        = (-V(q_i) + V_Q(q_i)) - baseline       V(q_i) = mean_j R(q_i, a_ij)

where r_ij is the answer's whole return, V(q_i) the solver's mean *task* reward (its return
without the quality part), V_Q(q_i) the quality score of the interaction and the baseline
the batch's mean challenger reward. Quality goes to both players, so the game is not
zero-sum: a challenger gains by stumping the solver only with questions the reference finds
worth answering. With ``quality=None`` (no quality term) this is the paper's LSP-Zero.

The total loss is L_sol + alpha * L_ch: alpha is the challenger's per-role loss scale
(``objective_options.role_lr_scale.challenger``); the KL to the reference is
``objective_options.kl_coef``.

Matching samples to questions: the challenger's turn and the solver's answers of one match
share ``Sample.episode``; the quality share of a return is ``Sample.parts[quality]``.
A solver answer with no task part (the judge could not read it) is dropped (advantage None)
and left out of V; a challenger whose quality score is missing, or whose question no answer
was scored on, is dropped too. An invalid challenger attempt (an empty question) keeps its
penalty as its challenger reward, so it is worse than any question that was asked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import torch
from pydantic import Field

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Estimator, Reduce, Sample, local
from selfplay.api.options import Options

INVALID = "invalid"  # the part name of an invalid attempt's penalty (core/train/samples.py)


class LSPOptions(Options):
    challenger: str = Field(default="challenger", description="The role that writes tasks.")
    solver: str = Field(default="solver", description="The role that answers them.")
    quality: str | None = Field(
        default="quality", description="Reward term of the quality self-reward (null: LSP-Zero)."
    )
    scale: bool = Field(default=False, description="Divide the challenger's advantage by std.")
    eps: float = Field(default=1e-6, gt=0, description="Added to the deviation before dividing.")


class LSP(Estimator):
    """Language Self-Play: GRPO for the solver, -V(q) + V_Q(q) - baseline for the challenger."""

    Options = LSPOptions
    name = "lsp"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        o = self.options
        if o.challenger == o.solver:
            raise ConfigError(f"lsp: the challenger and solver roles are both {o.challenger!r}.")
        self.challenger, self.solver, self.quality = o.challenger, o.solver, o.quality
        self.scale, self.eps = o.scale, o.eps

    def __call__(self, samples: Sequence[Sample], reduce: Reduce = local) -> list[float | None]:
        self._check_roles(samples)
        answers: dict[int, list[int]] = defaultdict(list)
        for i, sample in enumerate(samples):
            if sample.role == self.solver and self._task(sample) is not None:
                answers[sample.episode].append(i)
        advantages: list[float | None] = [None] * len(samples)
        for members in answers.values():
            for i, advantage in zip(members, self._solver(samples, members), strict=True):
                advantages[i] = advantage
        value = {
            episode: sum(self._task(samples[i]) for i in members) / len(members)
            for episode, members in answers.items()
        }
        rewards = {
            i: reward
            for i, s in enumerate(samples)
            if s.role == self.challenger and (reward := self._challenger(s, value)) is not None
        }
        baseline = self._mean(list(rewards.values()), reduce)
        for i, reward in rewards.items():
            advantages[i] = reward - baseline
        return advantages

    # ---- the two roles ----------------------------------------------------------------------

    def _solver(self, samples: Sequence[Sample], members: list[int]) -> list[float]:
        """GRPO within one question: each answer's return minus the answers' mean."""
        returns = [samples[i].reward for i in members]
        mean = sum(returns) / len(returns)
        centred = [r - mean for r in returns]
        if not self.scale:
            return centred
        std = (sum(c * c for c in centred) / len(centred)) ** 0.5
        return [c / (std + self.eps) for c in centred]

    def _challenger(self, sample: Sample, value: dict[int, float]) -> float | None:
        """-V(q) + V_Q(q) for the challenger's question; None when either is unknown."""
        if INVALID in sample.parts or (not sample.valid and not sample.parts):
            return sample.reward
        quality = 0.0
        if self.quality is not None:
            if self.quality not in sample.parts:
                return None
            quality = sample.parts[self.quality]
        if sample.episode not in value:
            return None
        return -value[sample.episode] + quality

    def _task(self, sample: Sample) -> float | None:
        """The solver's return without its quality part; None when only quality scored it."""
        task = {k: v for k, v in sample.parts.items() if k != self.quality}
        if not sample.parts:  # no split known: the whole return is the task reward
            return sample.reward
        return sum(task.values()) if task else None

    # ---- helpers ----------------------------------------------------------------------------

    def _mean(self, values: list[float], reduce: Reduce) -> float:
        total = reduce(torch.tensor([sum(values), float(len(values))], dtype=torch.float64))
        return (total[0] / total[1]).item() if total[1] > 0 else 0.0

    def _check_roles(self, samples: Sequence[Sample]) -> None:
        stray = sorted({s.role for s in samples} - {self.challenger, self.solver})
        if stray:
            raise ConfigError(
                f"The lsp estimator trains a challenger ({self.challenger!r}) and a solver "
                f"({self.solver!r}); the game also has {', '.join(map(repr, stray))}. Name the "
                "roles with estimator_options.challenger / estimator_options.solver."
            )
