"""Weight sync: the rollout servers get the trainer's weights after every update.

Two steps, so that a match never sees its weights change under it:

- `publish(version)`, in the trainer's thread right after the update: the weights are written
  to ``<run>/rollout/`` — under LoRA the adapter as a PEFT folder, otherwise the model's
  parameters as one safetensors file — and become the newest version;
- `push()`, between two batches of matches (whoever plays them): every live server is brought
  to the newest version. Under LoRA the folder is loaded through vLLM's dynamic-LoRA route as
  the adapter ``learner-v<N>`` (``/v1/load_lora_adapter``), the learner's requests name it,
  and the one before is unloaded. Full weights go through vLLM's weight-transfer routes
  (``/start_weight_update``, ``/update_weights``, ``/finish_weight_update``) with selfplay's
  ``file`` transport, which `selfplay serve` speaks; vLLM moves full weights over NCCL or CUDA
  IPC, which this build does not drive, so a run refuses full-weight sync to another server
  (train with --lora, or use `selfplay serve` workers: docs/serving.md).

A push that fails is retried (the client's retries and backoff); one that still fails stops
the run with `RolloutFailure` (exit code 5) naming the server. Older files are deleted once
every server has moved past them. A version is the count of weight syncs: 0 is the weights
the run starts from (the cold start's, or a checkpoint's), N those after iteration N.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from textwrap import shorten
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.core.models.served.policy import ServedError
from selfplay.core.serving.rollout_client import RolloutFailure, ServedLearner, Worker
from selfplay.core.serving.weights import describe

ADAPTER = "learner-v{version}"


class WeightSync:
    """Publishes the trainer's weights and brings the rollout servers to them."""

    def __init__(self, learner: ServedLearner, model: Any, folder: Path, lora: bool) -> None:
        self.learner, self.model, self.folder, self.lora = learner, model, Path(folder), lora
        self.published = -1  # the newest version written
        self.held: dict[int, int] = {}  # id(worker) -> the version it holds

    @property
    def failures(self) -> int:
        """Servers taken out of the run so far."""
        return self.learner.workers.failures

    def check(self) -> None:
        """Refuse full-weight sync to a server that does not speak the file transport."""
        if self.lora:
            return
        others = [w.url for w in self.learner.workers.workers if not w.ours]
        if others:
            raise ConfigError(
                f"rollout.servers {', '.join(others)}: full weights reach vLLM over NCCL or "
                "CUDA IPC, which this build does not drive. Train with --lora (the adapter "
                "loads through /v1/load_lora_adapter), or serve the learner with `selfplay "
                "serve RUN --learner` there (docs/serving.md)."
            )
        for worker in self.learner.workers.live:
            self._post(worker, "init_weight_transfer_engine", {"init_info": {"backend": "file"}})

    def publish(self, version: int) -> None:
        """Write the weights as ``version`` (the trainer's thread, after its update)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(version)
        if self.lora:
            from selfplay.core.models.lora import adapter_state_dict, save_adapter_folder

            shutil.rmtree(path, ignore_errors=True)
            save_adapter_folder(self.model, adapter_state_dict(self.model), path)
        else:
            from safetensors.torch import save_file

            tensors = {n: p.detach().cpu().contiguous() for n, p in self.model.named_parameters()}
            temporary = path.with_suffix(".tmp")
            save_file(tensors, str(temporary))
            temporary.replace(path)
        self.published = version

    def push(self, version: int | None = None) -> bool:
        """Bring every live server to ``version`` (default: the newest); whether anything
        changed."""
        version = self.published if version is None else version
        changed = False
        for worker in self.learner.workers.live:
            if self.held.get(id(worker)) == version:
                continue
            if self.lora:
                self._load_adapter(worker, version)
            else:
                self._send_weights(worker, version)
            self.held[id(worker)] = version
            changed = True
        self.learner.version = version
        self._forget_older(version)
        return changed

    def _send_weights(self, worker: Worker, version: int) -> None:
        info = {**describe(self.model), "packed": False, "path": str(self._path(version))}
        self._post(worker, "start_weight_update", {"is_checkpoint_format": False})
        self._post(worker, "update_weights", {"update_info": info})
        self._post(worker, "finish_weight_update", {"version": version})

    def _load_adapter(self, worker: Worker, version: int) -> None:
        name = ADAPTER.format(version=version)
        body = {"lora_name": name, "lora_path": str(self._path(version).resolve())}
        try:
            worker.client.post("load_lora_adapter", body)
        except ServedError as err:
            if "already" not in str(err).lower():
                raise RolloutFailure(self._failed(worker, err)) from None
        before = self.held.get(id(worker))
        worker.model = name
        if before is not None and before != version:
            old = {"lora_name": ADAPTER.format(version=before)}
            # an adapter left loaded costs the server memory, not the run's results
            with contextlib.suppress(ServedError):
                worker.client.post("unload_lora_adapter", old)

    def _post(self, worker: Worker, route: str, body: dict[str, Any]) -> Any:
        try:
            return worker._root_request(route, body)
        except ServedError as err:
            raise RolloutFailure(self._failed(worker, err)) from None

    def _failed(self, worker: Worker, err: Exception) -> str:
        """Why, in full (an unreachable server's reason, not its whole advice); what to check.
        The run adds where it stopped and the resume that continues it (core/run/faults.py)."""
        why = getattr(err, "brief", None) or shorten(str(err), 300, placeholder=" ...")
        return (
            f"rollout server {worker.url} did not take the weights of version "
            f"{self.published} ({why}). Check the server (its log, its disk: it reads the "
            "weights from the run folder); a resume starts the run's local workers anew."
        )

    def _path(self, version: int) -> Path:
        if self.lora:
            return self.folder / ADAPTER.format(version=version)
        return self.folder / f"weights-v{version}.safetensors"

    def _forget_older(self, version: int) -> None:
        """Delete the files of versions no live server holds any more."""
        for path in self.folder.glob("learner-v*" if self.lora else "weights-v*.safetensors"):
            number = path.name.removeprefix("learner-v").removeprefix("weights-v").split(".")[0]
            if number.isdigit() and int(number) < version:
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)


class WeightSyncs:
    """Every learner's `WeightSync` as one: a run of several learners syncs each learner's
    servers with its own weights, at the same versions."""

    def __init__(self, syncs: list[WeightSync]) -> None:
        self.syncs = syncs

    @property
    def published(self) -> int:
        return min((sync.published for sync in self.syncs), default=-1)

    @property
    def failures(self) -> int:
        return sum(sync.failures for sync in self.syncs)

    def check(self) -> None:
        for sync in self.syncs:
            sync.check()

    def publish(self, version: int) -> None:
        for sync in self.syncs:
            sync.publish(version)

    def push(self, version: int | None = None) -> bool:
        changed = [sync.push(version) for sync in self.syncs]
        return any(changed)
