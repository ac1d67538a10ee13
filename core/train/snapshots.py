"""Snapshots of the learner: written to the run folder, loaded on demand as frozen opponents.

    <run folder>/pool/snapshot-12.pt    the learner after iteration 12: its full weights, or
                                         only its LoRA adapters when training adapters

Only a few snapshots are held in memory at once (least recently used goes first), so memory
stays flat however large the pool grows. Process 0 writes; every process reads the file.
"""

from __future__ import annotations

import copy
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch

from selfplay.api.policy import Policy

LOADED = 3  # snapshots held in memory: a payoff-matrix row needs two at a time


class SnapshotError(RuntimeError):
    """A snapshot could not be written or read; the message names the path."""


class SnapshotStore:
    """Saves the learner's weights under a pool name and turns names back into policies."""

    def __init__(self, folder: Path, learner: Any, lora: bool, write: bool = True) -> None:
        self.folder, self.learner, self.lora, self.write = Path(folder), learner, lora, write
        self._loaded: OrderedDict[str, Policy] = OrderedDict()

    def path(self, name: str) -> Path:
        return self.folder / f"{name.replace(':', '-')}.pt"

    def save(self, name: str) -> None:
        """Write the learner's current weights as ``name`` (atomically; process 0 only)."""
        self._loaded.pop(name, None)
        if not self.write:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        target, temporary = self.path(name), self.path(name).with_suffix(".tmp")
        try:
            torch.save(self._weights(), temporary)
            os.replace(temporary, target)
        except OSError as err:
            raise SnapshotError(f"Could not write the pool snapshot {target}: {err}") from err

    def delete(self, name: str) -> None:
        self._loaded.pop(name, None)
        if self.write:
            self.path(name).unlink(missing_ok=True)

    def __call__(self, name: str) -> Policy:
        """The frozen policy of snapshot ``name``, loaded from disk if not held in memory."""
        if name in self._loaded:
            self._loaded.move_to_end(name)
            return self._loaded[name]
        path = self.path(name)
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except (OSError, RuntimeError) as err:
            raise SnapshotError(
                f"Could not read the pool snapshot {path}: {err}. The pool lists it; was the "
                "run folder's pool/ folder moved or cleaned?"
            ) from err
        policy = self._frozen(name, state)
        self._loaded[name] = policy
        while len(self._loaded) > LOADED:
            self._loaded.popitem(last=False)
        return policy

    def _weights(self) -> dict[str, torch.Tensor]:
        model = self.learner.model
        if self.lora:
            from selfplay.core.models.lora import adapter_state_dict

            return adapter_state_dict(model)
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    def _frozen(self, name: str, state: dict[str, torch.Tensor]) -> Policy:
        device = next(self.learner.model.parameters()).device
        model = copy.deepcopy(self.learner.model).eval().requires_grad_(False)
        state = {k: v.to(device) for k, v in state.items()}
        if self.lora:
            from selfplay.core.models.lora import load_adapter_state_dict

            load_adapter_state_dict(model, state)
        else:
            model.load_state_dict(state)
        policy = copy.copy(self.learner)  # same tokenizer and generation settings
        policy.model, policy.name = model, name
        if getattr(self.learner, "role_context", None) is not None:
            from selfplay.core.models.lora import use_adapter

            policy.role_context = lambda role: use_adapter(model, role)
        return policy
