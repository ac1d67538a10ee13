"""Sequence-level REINFORCE: -A_i * (sum of the answer's token log-probs), averaged over answers.

A third-party objective: one class, one registration line. It reads advantages (the loop runs
the estimator for it) and never calls the model: the loop hands it the scores.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from selfplay import IterationData, Loss, Objective, ObjectiveOptions, hookimpl


class SequenceOptions(ObjectiveOptions):
    scale: float = Field(default=1.0, gt=0, description="Multiplies the loss.")


@dataclass(frozen=True)
class Scored:
    samples: tuple
    advantage: float


class SequencePG(Objective):
    """REINFORCE on whole answers: -A * log p(answer)."""

    name = "sequence-pg"
    Options = SequenceOptions
    needs = "advantages"
    metric_names = ("answer_logp",)

    def prepare(self, data: IterationData) -> list[Scored]:
        return [
            Scored((sample,), advantage)
            for sample, advantage in zip(data.samples, data.advantages, strict=True)
            if advantage is not None
        ]

    def loss(self, items, current, reference) -> Loss:
        import torch

        answer_logp = (current.logp * current.mask).sum(-1)
        advantages = torch.tensor([item.advantage for item in items], device=answer_logp.device)
        loss = -(advantages * answer_logp).mean() * self.options.scale
        return Loss(loss, {"answer_logp": answer_logp.mean().item()})


@hookimpl
def register_objectives(register):
    register("sequence-pg", SequencePG)
