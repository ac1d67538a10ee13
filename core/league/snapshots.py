"""Snapshots of the learner: written to the run folder, loaded on demand as frozen opponents.

    <run folder>/pool/snapshot-12.pt    the learner after iteration 12: its full weights, or
                                         only its LoRA adapters when training adapters
    <run folder>/pool/snapshot-12/      with ``pool.server``: the same adapter as a PEFT folder
    <run folder>/pool/NAME/snapshot-12.pt   in a run of several learners, learner NAME's: each
                                         learner keeps its own pool folder (`LearnerSnapshots`)

Only a few snapshots are held in memory at once (least recently used goes first), so memory
stays flat however large the pool grows. Process 0 writes; every process reads the file.

With ``pool.server`` (a LoRA run only) snapshots are played by that server instead: process 0
writes each snapshot's PEFT folder and loads it there as the adapter ``<run>-snapshot-12``
through vLLM's dynamic-LoRA protocol (``/v1/load_lora_adapter``), and unloads it when the pool
evicts it; every process asks the server for the adapter by that name, loading it first if the
server lacks it (a restarted server, a resumed run). The server reads the folder by its path,
so it must see the run folder (the same machine or a shared disk).
"""

from __future__ import annotations

import copy
import os
import shutil
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Policy
from selfplay.api.sampler import learner_snapshot, split_snapshot

LOADED = 3  # snapshots held in memory: a payoff-matrix row needs two at a time
NOT_LORA = (
    "pool.server={server!r} serves pool snapshots as LoRA adapters on the server's base model, "
    "so it needs a LoRA run (--lora). Full-weight snapshots would need their weights synced to "
    "the server, which is not built; train with --lora or drop pool.server."
)


class SnapshotError(RuntimeError):
    """A snapshot could not be written or read; the message names the path."""


class SnapshotStore:
    """Saves the learner's weights under a pool name and turns names back into policies."""

    def __init__(
        self,
        folder: Path,
        learner: Any,
        lora: bool,
        write: bool = True,
        server: str | None = None,
        label: str | None = None,
    ) -> None:
        self.folder, self.learner, self.lora, self.write = Path(folder), learner, lora, write
        self.label = label  # a learner's name: its snapshots play as ``snapshot:12:NAME``
        self._loaded: OrderedDict[str, Policy] = OrderedDict()
        self.server: str | None = None
        self._served: dict[str, Policy] = {}
        self.serve_on(server)

    def serve_on(self, server: str | None) -> None:
        """Play snapshots through ``server`` (``pool.server``, ``openai:URL``) from now on."""
        if server is not None and not self.lora:
            raise ConfigError(NOT_LORA.format(server=server))
        self.server = server

    def path(self, name: str) -> Path:
        return self.folder / f"{name.replace(':', '-')}.pt"

    def adapter_folder(self, name: str) -> Path:
        """The PEFT folder of snapshot ``name`` that the server loads (with ``pool.server``)."""
        return self.folder / name.replace(":", "-")

    def adapter_name(self, name: str) -> str:
        """The model name of snapshot ``name`` on the server: ``<run folder name>-snapshot-N``
        (``<run folder name>-NAME-snapshot-N`` for learner NAME's)."""
        run = (self.folder.parent if self.label else self.folder).resolve().parent.name
        own = f"{self.label}-" if self.label else ""
        return f"{run.replace(':', '-')}-{own}{name.replace(':', '-')}"

    def played_as(self, name: str) -> str:
        """The seat-holder name snapshot ``name`` plays under (`learner_snapshot`)."""
        return learner_snapshot(name, self.label) if self.label else name

    def save(self, name: str) -> None:
        """Write the learner's current weights as ``name`` (atomically; process 0 only)."""
        self._loaded.pop(name, None)
        self._served.pop(name, None)
        if not self.write:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        target, temporary = self.path(name), self.path(name).with_suffix(".tmp")
        weights = self._weights()
        try:
            torch.save(weights, temporary)
            os.replace(temporary, target)
            if self.server is not None:
                self._write_adapter_folder(name, weights)
        except OSError as err:
            raise SnapshotError(f"Could not write the pool snapshot {target}: {err}") from err
        if self.server is not None:
            from selfplay.core.models.served.policy import load_adapter

            served = self._served_policy(name)
            self._unload(served, name)  # a snapshot of an earlier attempt under the same name
            load_adapter(served, self.adapter_name(name), str(self.adapter_folder(name).resolve()))

    def delete(self, name: str) -> None:
        self._loaded.pop(name, None)
        served = self._served.pop(name, None)
        if self.write:
            self.path(name).unlink(missing_ok=True)
            if self.server is not None:
                self._unload(served or self._served_policy(name), name)
                shutil.rmtree(self.adapter_folder(name), ignore_errors=True)

    def __call__(self, name: str) -> Policy:
        """The frozen policy of snapshot ``name``, loaded from disk if not held in memory."""
        if self.server is not None:
            if name not in self._served:
                self._served[name] = self._served_policy(name)
            return self._served[name]
        if name in self._loaded:
            self._loaded.move_to_end(name)
            return self._loaded[name]
        policy = self._frozen(name, self._read(name))
        self._loaded[name] = policy
        while len(self._loaded) > LOADED:
            self._loaded.popitem(last=False)
        return policy

    def restore(self, name: str) -> None:
        """Put snapshot ``name``'s weights back into the learner being trained (``pool.keep_best``):
        all of them, or its adapters when training adapters."""
        self._load_into(self.learner.model, self._read(name))

    def _read(self, name: str) -> dict[str, torch.Tensor]:
        path = self.path(name)
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except (OSError, RuntimeError) as err:
            raise SnapshotError(
                f"Could not read the pool snapshot {path}: {err}. The pool lists it; was the "
                "run folder's pool/ folder moved or cleaned?"
            ) from err

    def _load_into(self, model: Any, state: dict[str, torch.Tensor]) -> None:
        """Copy a snapshot's weights (its adapters under LoRA) into ``model``, in place."""
        device = next(model.parameters()).device
        state = {k: v.to(device) for k, v in state.items()}
        if self.lora:
            from selfplay.core.models.lora import load_adapter_state_dict

            load_adapter_state_dict(model, state)
        else:
            model.load_state_dict(state)

    def _write_adapter_folder(self, name: str, weights: dict[str, torch.Tensor]) -> None:
        from selfplay.core.models.lora import save_adapter_folder

        folder = self.adapter_folder(name)
        temporary = folder.with_name(f"{folder.name}.tmp")
        shutil.rmtree(temporary, ignore_errors=True)
        temporary.mkdir()
        save_adapter_folder(self.learner.model, weights, temporary)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(temporary, folder)

    def _served_policy(self, name: str) -> Policy:
        """Snapshot ``name`` as the server's adapter; it loads itself there if missing."""
        from selfplay.core.models.served.policy import ServedSpec, served_policy

        spec = ServedSpec.parse(self.server or "", "pool.server", server=True)
        adapter, path = self.adapter_name(name), str(self.adapter_folder(name).resolve())
        spec = replace(spec, spec=f"openai:{spec.base}#{adapter}", model=adapter, lora=path)
        played = self.played_as(name)
        return served_policy(spec, like=self.learner, name=played)  # type: ignore[arg-type]

    def _unload(self, served: Any, name: str) -> None:
        from selfplay.core.models.served.policy import ServedError, unload_adapter

        try:
            unload_adapter(served, self.adapter_name(name))
        except ServedError as err:
            message = str(err)
            if not any(gone in message for gone in ("HTTP 404", "not loaded", "cannot be found")):
                raise  # anything but "not loaded there", which leaves nothing to drop

    def _weights(self) -> dict[str, torch.Tensor]:
        model = self.learner.model
        if self.lora:
            from selfplay.core.models.lora import adapter_state_dict

            return adapter_state_dict(model)
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    def _frozen(self, name: str, state: dict[str, torch.Tensor]) -> Policy:
        model = copy.deepcopy(self.learner.model).eval().requires_grad_(False)
        self._load_into(model, state)
        policy = copy.copy(self.learner)  # same tokenizer and generation settings
        policy.model, policy.name = model, self.played_as(name)
        if getattr(self.learner, "role_context", None) is not None:
            from selfplay.core.models.lora import use_adapter

            policy.role_context = lambda role: use_adapter(model, role)
        return policy


class LearnerSnapshots:
    """The pools of a run of several learners: one `SnapshotStore` per learner, at
    ``<run folder>/pool/NAME/``, all taking their snapshots at the same iterations.

    The league and the samplers keep one list of pool names (``snapshot:12``: every learner as
    it was after iteration 12); a seat turns a name into the snapshot of the learner that plays
    the seat's role (``snapshot:12:NAME``, `Seats.holder`), so each learner's opponents come
    from the other learners' pools.
    """

    def __init__(self, stores: dict[str, SnapshotStore]) -> None:
        self.stores = stores

    def serve_on(self, server: str | None) -> None:
        for store in self.stores.values():
            store.serve_on(server)

    def save(self, name: str) -> None:
        for store in self.stores.values():
            store.save(name)

    def delete(self, name: str) -> None:
        for store in self.stores.values():
            store.delete(name)

    def __call__(self, holder: str) -> Policy:
        """The frozen policy of ``snapshot:12:NAME``: learner NAME after iteration 12."""
        name, learner = split_snapshot(holder)
        if learner not in self.stores:
            known = ", ".join(learner_snapshot(name, n) for n in self.stores)
            raise SnapshotError(
                f"{holder!r} names no learner's snapshot; this run's are {known}. A run of "
                "several learners plays each seat's snapshot of the learner of that role."
            )
        return self.stores[learner](name)


def snapshot_store(
    config: Any, learners: list[Any], folder: Path, write: bool
) -> SnapshotStore | LearnerSnapshots:
    """The run's pool on disk: the shared policy's store, or one per learner (pool/NAME/)."""
    if not config.learners:
        return SnapshotStore(folder, learners[0].policy, config.lora.enabled, write)
    return LearnerSnapshots(
        {
            learner.name: SnapshotStore(
                folder / learner.name,
                learner.policy,
                learner.config.lora.enabled,
                write,
                label=learner.name,
            )
            for learner in learners
        }
    )
