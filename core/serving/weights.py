"""vLLM's weight-transfer routes, served over a CPU transport: the new weights travel in a file.

vLLM (with ``VLLM_SERVER_DEV_MODE=1`` and ``--weight-transfer-config '{"backend": "nccl"}'``)
takes new weights in four calls, the tensors themselves moving over NCCL or CUDA IPC:

    POST /init_weight_transfer_engine  {"init_info": {...}}          once, before training
    POST /start_weight_update          {"is_checkpoint_format": false}
    POST /update_weights               {"update_info": {"names", "dtype_names", "shapes",
                                                        "packed": false}}
    POST /finish_weight_update         {}
    POST /pause, /resume; GET /is_paused, /get_world_size

`selfplay serve` answers the same routes with one transport of its own, ``file``: the
update's ``update_info`` also names ``path``, a safetensors file on the server's machine
holding those tensors, which the server reads and copies into its model. The transfer is
checked before anything changes: every name must be one of the model's parameters, with the
dtype and shape given. The model's lock is held while the weights change, so no batch ever
generates with half-old, half-new weights. ``finish_weight_update`` may name the new
``version`` (selfplay's extension; otherwise the count of updates), which every completion
reports back as ``selfplay.policy_version``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

TRANSPORTS = ("file",)


class WeightError(ValueError):
    """A weight update the server cannot take; the message names what is wrong (a 400)."""


class InitRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    init_info: dict[str, Any] = Field(default_factory=dict)


class StartRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    is_checkpoint_format: bool = False


class UpdateInfo(BaseModel):
    model_config = ConfigDict(extra="ignore")
    names: list[str]
    dtype_names: list[str]
    shapes: list[list[int]]
    packed: bool = False
    path: str | None = None


class UpdateRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    update_info: UpdateInfo


class FinishRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    version: int | None = None


class WeightReceiver:
    """The weights of ``model`` (a torch module) as the routes above change them."""

    def __init__(self, model: Any, lock: threading.Lock, transport: str | None = None) -> None:
        self.model, self.lock, self.transport = model, lock, transport
        self.version = 0
        self.ready = False  # init_weight_transfer_engine was called
        self.updating = False
        self.paused = threading.Event()

    def _check_enabled(self) -> None:
        if self.transport is None:
            raise WeightError(
                "This server takes no weight updates: start it with --weight-transfer file "
                "(selfplay serve), or use vLLM's --weight-transfer-config."
            )

    def init(self, request: InitRequest) -> None:
        self._check_enabled()
        self.ready = True

    def start(self, request: StartRequest) -> None:
        self._check_enabled()
        if not self.ready:
            raise WeightError("Call /init_weight_transfer_engine before a weight update.")
        if request.is_checkpoint_format:
            raise WeightError("is_checkpoint_format=true is not supported: send model tensors.")
        self.updating = True

    def update(self, request: UpdateRequest) -> None:
        """Read the file the update names and copy its tensors into the model."""
        self._check_enabled()
        if not self.updating:
            raise WeightError("Call /start_weight_update before /update_weights.")
        info = request.update_info
        if info.packed:
            raise WeightError("packed=true is not supported by the file transport.")
        if info.path is None:
            raise WeightError("update_info.path is missing: the file transport reads the file.")
        if not len(info.names) == len(info.dtype_names) == len(info.shapes):
            raise WeightError("update_info.names, dtype_names and shapes differ in length.")
        tensors = _read(Path(info.path))
        import torch

        params = dict(self.model.named_parameters())
        for name, dtype, shape in zip(info.names, info.dtype_names, info.shapes, strict=True):
            if name not in params:
                raise WeightError(f"The model has no parameter {name!r}.")
            if name not in tensors:
                raise WeightError(f"{info.path} holds no tensor {name!r}.")
            tensor, param = tensors[name], params[name]
            if str(tensor.dtype).removeprefix("torch.") != dtype or list(tensor.shape) != shape:
                raise WeightError(f"{name!r} in {info.path} is not {dtype} {shape}.")
            if list(param.shape) != shape:
                raise WeightError(f"{name!r} is {list(param.shape)} here, not {shape}.")
        with self.lock, torch.no_grad():
            for name in info.names:
                params[name].copy_(tensors[name].to(params[name].dtype))

    def finish(self, request: FinishRequest) -> int:
        self._check_enabled()
        if not self.updating:
            raise WeightError("Call /start_weight_update before /finish_weight_update.")
        self.updating = False
        self.version = request.version if request.version is not None else self.version + 1
        return self.version


def weight_routes(receiver: WeightReceiver, batcher: Any, endpoint: Any) -> list[Any]:
    """The routes above as Starlette routes; ``endpoint(handler, body)`` turns a handler into
    one (the server's: validation and errors as JSON). /pause holds new batches back."""
    import asyncio

    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def call(method: str) -> Any:
        async def handler(body: Any) -> Any:
            try:
                done = await asyncio.to_thread(getattr(receiver, method), body)
            except WeightError as err:
                return JSONResponse(_problem(str(err)), status_code=400)
            return JSONResponse({"message": "ok", "version": receiver.version, "done": done})

        return handler

    async def pause() -> Any:
        batcher.running.clear()
        return JSONResponse({"message": "paused"})

    async def resume() -> Any:
        batcher.running.set()
        return JSONResponse({"message": "resumed"})

    async def is_paused() -> Any:
        return JSONResponse({"is_paused": not batcher.running.is_set()})

    async def world_size() -> Any:
        return JSONResponse({"world_size": 1})

    posts = {
        "/init_weight_transfer_engine": ("init", InitRequest),
        "/start_weight_update": ("start", StartRequest),
        "/update_weights": ("update", UpdateRequest),
        "/finish_weight_update": ("finish", FinishRequest),
    }
    routes = [
        Route(path, endpoint(call(m), body), methods=["POST"]) for path, (m, body) in posts.items()
    ]
    routes += [
        Route("/pause", endpoint(pause), methods=["POST"]),
        Route("/resume", endpoint(resume), methods=["POST"]),
        Route("/is_paused", endpoint(is_paused), methods=["GET"]),
        Route("/get_world_size", endpoint(world_size), methods=["GET"]),
    ]
    return routes


def _problem(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "BadRequestError", "code": 400}}


def _read(path: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except FileNotFoundError:
        raise WeightError(f"No weights file at {path} on the server's machine.") from None
    except Exception as err:  # a damaged or foreign file
        raise WeightError(f"Cannot read weights from {path}: {type(err).__name__}: {err}") from None


def describe(model: Any) -> dict[str, list[Any]]:
    """The ``update_info`` lists (names, dtype names, shapes) of a model's parameters."""
    names, dtypes, shapes = [], [], []
    for name, param in model.named_parameters():
        names.append(name)
        dtypes.append(str(param.dtype).removeprefix("torch."))
        shapes.append(list(param.shape))
    return {"names": names, "dtype_names": dtypes, "shapes": shapes}
