"""The reference policy: what the KL term, DPO and the ``reference`` judge measure against.

One object, built once after the model is set up, in one of three forms:

- a frozen copy of the model (full fine-tuning), on the device and in the run's precision;
- under LoRA, a set of adapter weights swapped into the shared base while the reference is
  scored, so no second copy of the base exists (the cold start's adapters by default);
- none, when nothing reads a reference (no KL, no objective or reward asks for one).

It starts as the policy the cold start left. `refresh` makes it the current policy (the
iterate M_t that DPO anchors to); `pull` moves it part of the way toward the policy after
every iteration (``train.reference_update``, the magnet of magnetic mirror descent).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from selfplay.api.errors import ConfigError
from selfplay.core.models.lora import adapter_state_dict, reference_logits_context


class Reference:
    """``module``: the plain model (weights); ``forward``: what to call to score under LoRA
    (the strategy-wrapped model, which applies the run's precision)."""

    def __init__(self, module: torch.nn.Module, forward: Any, lora: bool, needed: bool) -> None:
        self.module, self.forward, self.lora = module, forward, lora
        self.copy: torch.nn.Module | None = None
        self.adapters: dict[str, torch.Tensor] | None = None
        if lora:  # a few tensors: kept whether or not anything reads them yet
            self.adapters = adapter_state_dict(module)
        elif needed:
            self.copy = copy.deepcopy(module).eval().requires_grad_(False)

    @property
    def exists(self) -> bool:
        return self.copy is not None or self.adapters is not None

    @contextmanager
    def scoring(self) -> Iterator[torch.nn.Module]:
        """The model to score the reference with, inside a no-grad block.

        Under LoRA the adapter weights are swapped in place for the block: score the
        reference before a forward pass whose graph is still to be back-propagated.
        """
        if self.copy is not None:
            with torch.no_grad():
                yield self.copy
        elif self.adapters is not None:
            with reference_logits_context(self.module, self.adapters):
                yield self.forward
        else:
            raise ConfigError("This run keeps no reference policy; nothing can be scored by it.")

    def refresh(self) -> None:
        """The reference becomes the current policy."""
        if self.adapters is not None:
            self.adapters = adapter_state_dict(self.module)
        elif self.copy is not None:
            with torch.no_grad():
                for ref, current in zip(
                    self.copy.parameters(), self.module.parameters(), strict=True
                ):
                    ref.copy_(current.detach())

    def pull(self, rate: float) -> None:
        """``reference <- (1 - rate) * reference + rate * policy``, tensor by tensor.

        Under LoRA each adapter matrix moves on its own (A and B, not their product): the
        reference still trails the policy, from frozen at rate 0 to the policy itself at 1.
        """
        if not rate:
            return
        if self.copy is not None:
            pull_reference(self.copy, self.module, rate)
        elif self.adapters is not None:
            current = adapter_state_dict(self.module)
            for name, tensor in self.adapters.items():
                tensor.lerp_(current[name].to(tensor.dtype), rate)

    def state_dict(self) -> dict[str, Any]:
        """Checkpoint entries, under the names wave-1 checkpoints used."""
        if self.adapters is not None:
            return {"lora_reference": self.adapters}
        if self.copy is not None:
            return {"reference": self.copy.state_dict()}
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.adapters is not None:
            self.adapters = state.get("lora_reference", self.adapters)
        elif self.copy is not None:
            self.copy.load_state_dict(state["reference"])


@torch.no_grad()
def pull_reference(reference: torch.nn.Module, model: torch.nn.Module, rate: float) -> None:
    """``reference <- (1 - rate) * reference + rate * model``, parameter by parameter.

    With a KL pull toward it, a reference that trails the policy slowly is the "magnet" of
    magnetic mirror descent (Sokota et al., 2023), which converges in the last iterate of
    two-player zero-sum games where a frozen or absent reference cycles.
    """
    for ref, current in zip(reference.parameters(), model.parameters(), strict=True):
        ref.lerp_(current.detach(), rate)
