"""An exponential moving average of the trained weights: the policy a run hands over.

Self-play's last iterate keeps moving: at a few key positions its argmax flips between moves of
nearly equal probability from one iteration to the next, so a greedy evaluation of the last
iterate swings. The average of recent iterates moves slowly, as the average policy of fictitious
play does, and is what the run evaluates and finally keeps (Polyak averaging):

    average <- decay * average + (1 - decay) * weights        after every update

The first update's weights start it. Training itself goes on from the raw weights: an evaluation
swaps the average in and back out, and only the run's last checkpoint holds it as the model,
with the raw weights beside it, so that a later ``--resume`` trains on exactly as if the run had
never stopped. Only trainable parameters are averaged, so under LoRA the average is the
adapters' and costs their size, in float64 on the weights' device.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch


class WeightAverage:
    """The running average of ``model``'s trainable parameters."""

    def __init__(self, model: torch.nn.Module, decay: float) -> None:
        self.decay = decay
        self.named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.average: list[torch.Tensor] | None = None
        self.raw: list[torch.Tensor] | None = None  # the training weights, once the average is in
        self.updates = 0

    @torch.no_grad()
    def update(self) -> None:
        """Fold the current weights in (after an update)."""
        if self.average is None:
            self.average = [p.detach().double().clone() for _, p in self.named]
        else:
            for mean, (_, p) in zip(self.average, self.named, strict=True):
                mean.mul_(self.decay).add_(p.detach().double(), alpha=1 - self.decay)
        self.updates += 1

    @contextmanager
    def applied(self) -> Iterator[None]:
        """The average in place of the weights for the ``with`` block, then the weights back."""
        if self.average is None:
            yield
            return
        saved = [p.detach().clone() for _, p in self.named]
        self.apply()
        try:
            yield
        finally:
            with torch.no_grad():
                for (_, p), raw in zip(self.named, saved, strict=True):
                    p.copy_(raw)

    @torch.no_grad()
    def apply(self) -> None:
        """Make the average the weights (the end of a run), keeping the raw ones for a resume."""
        if self.average is None:
            return
        if self.raw is None:
            self.raw = [p.detach().clone() for _, p in self.named]
        for mean, (_, p) in zip(self.average, self.named, strict=True):
            p.copy_(mean.to(p.dtype))

    def state_dict(self) -> dict[str, Any]:
        if self.average is None:
            return {"updates": 0}
        names = [n for n, _ in self.named]
        state = {"updates": self.updates, "average": dict(zip(names, self.average, strict=True))}
        if self.raw is not None:
            state["raw"] = dict(zip(names, self.raw, strict=True))
        return state

    @torch.no_grad()
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the average; after a checkpoint that handed it over, the raw weights too
        (call it after the model's weights are loaded)."""
        self.updates = int(state.get("updates", 0))
        saved = state.get("average")
        self.average = self.raw = None
        if not saved:
            return
        device = self.named[0][1].device if self.named else "cpu"
        self.average = [saved[n].to(device=device, dtype=torch.float64) for n, _ in self.named]
        for name, p in self.named:
            if name in state.get("raw", {}):
                p.copy_(state["raw"][name].to(device=p.device, dtype=p.dtype))
