"""An OpenAI-compatible chat-completions server over a policy held in memory.

    GET  /v1/models                 the served model, its per-role names and loaded adapters
    POST /v1/chat/completions       messages in, a reply out (no streaming)
    POST /v1/load_lora_adapter      {"lora_name", "lora_path"}: vLLM's dynamic-LoRA protocol
    POST /v1/unload_lora_adapter    {"lora_name"}
    GET  /health                    200 once the model is loaded

Requests that arrive together are answered together: a worker thread takes whatever is
waiting (up to ``max_batch`` requests, after at most ``wait`` seconds), groups them by model
and sampling settings and makes one batched ``policy.act`` call per group, so a client's
concurrent requests share the model's forward passes as in the training loop.

Adapters (a LoRA run only): ``lora_path`` is a pool snapshot (``pool/snapshot-N.pt``), a
checkpoint folder, or a PEFT adapter folder written by ``selfplay export`` for the same run;
each is a few tensors kept in memory and swapped into the one base model while its requests
run. A model name ``NAME:ROLE`` picks a role's adapter in a run with one adapter per role.
Starlette carries the HTTP (with uvicorn, in core/commands/serve.py: the ``serve`` extra).
"""

from __future__ import annotations

import asyncio
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from selfplay.api.policy import Policy, Request
from selfplay.api.types import Completion, Message

Key = tuple[str, str | None, bool, float, float, int]  # adapter, role, greedy, t, top_p, tokens


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "user", "assistant"]
    content: str | list[dict[str, Any]]

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(part.get("text", "") for part in self.content if part.get("type") == "text")


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    seed: int | None = None
    n: int = Field(default=1, ge=1, le=64)
    stream: bool = False


class AdapterRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    lora_name: str = Field(min_length=1)
    lora_path: str = ""


class HTTPProblem(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class Adapters:
    """LoRA adapter states by name, swapped into the served model's adapters while used."""

    def __init__(self, policy: Policy, lora: bool) -> None:
        self.policy, self.lora = policy, lora
        self.states: dict[str, dict[str, Any]] = {}

    def load(self, name: str, path: str) -> None:
        if not self.lora:
            raise HTTPProblem(
                400,
                "This server serves a full-weight checkpoint; adapters load onto the base of "
                "a LoRA run: serve a run trained with --lora.",
            )
        if name in self.states:
            raise HTTPProblem(400, f"The lora adapter {name!r} has already been loaded.")
        from selfplay.core.models.lora import adapter_state_dict, load_adapter_state_dict

        state = read_adapter(Path(path), adapter_state_dict(self.policy.model))
        current = adapter_state_dict(self.policy.model)
        try:
            load_adapter_state_dict(self.policy.model, state)  # checks that it fits
        except (ValueError, RuntimeError) as err:  # other adapters, ranks or shapes
            lines = " ".join(str(err).strip().splitlines()[:2])[:400]
            raise HTTPProblem(
                400, f"The adapter at {path} does not fit this model: {lines}"
            ) from None
        finally:
            load_adapter_state_dict(self.policy.model, current)
        self.states[name] = state

    def unload(self, name: str) -> None:
        if self.states.pop(name, None) is None:
            raise HTTPProblem(404, f"The lora adapter {name!r} is not loaded.")

    @contextmanager
    def use(self, name: str | None) -> Iterator[None]:
        if name is None:
            yield
            return
        from selfplay.core.models.lora import adapter_state_dict, load_adapter_state_dict

        current = adapter_state_dict(self.policy.model)
        load_adapter_state_dict(self.policy.model, self.states[name])
        try:
            yield
        finally:
            load_adapter_state_dict(self.policy.model, current)


def read_adapter(path: Path, like: dict[str, Any]) -> dict[str, Any]:
    """An `adapter_state_dict` from a snapshot file, checkpoint folder or PEFT folder."""
    import torch

    try:
        if path.is_file():
            return torch.load(path, map_location="cpu", weights_only=True)
        if (path / "state.ckpt").is_file():
            state = torch.load(path / "state.ckpt", map_location="cpu", weights_only=True)
            return state["adapters"]
        if path.is_dir():
            return _peft_folder(path, like)
    except HTTPProblem:
        raise
    except Exception as err:  # damaged or foreign files
        why = f"{type(err).__name__}: {err}"
        raise HTTPProblem(400, f"Cannot read an adapter from {path}: {why}") from None
    raise HTTPProblem(
        400,
        f"No adapter at {path} (on the server's machine): pass a pool snapshot (.pt), a "
        "checkpoint folder or a PEFT adapter folder.",
    )


def _peft_folder(path: Path, like: dict[str, Any]) -> dict[str, Any]:
    from safetensors.torch import load_file

    names = sorted({key.partition("/")[0] for key in like})
    state: dict[str, Any] = {}
    for name in names:
        folder = path if name == "default" else path / name
        file = folder / "adapter_model.safetensors"
        if not file.is_file():
            raise HTTPProblem(400, f"No adapter_model.safetensors in {folder} (adapter {name!r}).")
        state.update({f"{name}/{key}": tensor for key, tensor in load_file(file).items()})
    return state


class Batcher:
    """Collects requests from the event loop; one worker thread answers them in batches."""

    def __init__(
        self,
        answer: Callable[[Key, list[Request]], list[Completion]],
        max_batch: int = 32,
        wait: float = 0.005,
    ) -> None:
        self.answer, self.max_batch, self.wait = answer, max_batch, wait
        self.jobs: queue.Queue[tuple[Key, Request, Future] | None] = queue.Queue()
        self.batches: list[int] = []  # sizes of the policy calls made, for tests and logs
        self.thread = threading.Thread(target=self._work, name="selfplay-serve", daemon=True)
        self.thread.start()

    def submit(self, key: Key, request: Request) -> Future:
        future: Future = Future()
        self.jobs.put((key, request, future))
        return future

    def close(self) -> None:
        self.jobs.put(None)
        self.thread.join(timeout=10)

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            jobs, deadline = [job], time.monotonic() + self.wait
            while len(jobs) < self.max_batch:
                try:
                    more = self.jobs.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if more is None:
                    self.jobs.put(None)
                    break
                jobs.append(more)
            groups: dict[Key, list[tuple[Request, Future]]] = {}
            for key, request, future in jobs:
                groups.setdefault(key, []).append((request, future))
            for key, group in groups.items():
                self._answer(key, group)

    def _answer(self, key: Key, group: list[tuple[Request, Future]]) -> None:
        self.batches.append(len(group))
        try:
            done = self.answer(key, [request for request, _ in group])
        except Exception as err:
            for _, future in group:
                future.set_exception(err)
            return
        for (_, future), completion in zip(group, done, strict=True):
            future.set_result(completion)


class ChatService:
    """The policy behind the endpoints: model names, adapters and batched answers."""

    def __init__(
        self,
        policy: Policy,
        name: str,
        *,
        lora: bool = False,
        roles: Sequence[str] = (),
        max_batch: int = 32,
    ) -> None:
        self.policy, self.name, self.roles = policy, name, list(roles)
        self.adapters = Adapters(policy, lora)
        self.created = int(time.time())
        self.lock = threading.Lock()
        self.batcher = Batcher(self._answer, max_batch=max_batch)

    def models(self) -> list[dict[str, Any]]:
        ids = [self.name, *(f"{self.name}:{role}" for role in self.roles)]
        rows = [self._row(i) for i in ids]
        for adapter in self.adapters.states:
            rows += [self._row(adapter, parent=self.name)]
            rows += [self._row(f"{adapter}:{r}", parent=self.name) for r in self.roles]
        return rows

    def _row(self, model: str, parent: str | None = None) -> dict[str, Any]:
        row = {"id": model, "object": "model", "created": self.created, "owned_by": "selfplay"}
        return {**row, "root": parent or model, "parent": parent}

    def resolve(self, model: str | None) -> tuple[str | None, str | None]:
        """(adapter or None for the served model, role or None) of a requested model name."""
        base, _, role = (model or self.name).partition(":")
        if base != self.name and base not in self.adapters.states:
            known = ", ".join(row["id"] for row in self.models())
            raise HTTPProblem(404, f"The model {model!r} does not exist; served: {known}.")
        if role and role not in self.roles:
            raise HTTPProblem(404, f"The model {model!r} does not exist: no role {role!r}.")
        if not role and self.roles:
            role = self.roles[0]
        return (None if base == self.name else base), (role or None)

    async def complete(self, chat: ChatRequest) -> dict[str, Any]:
        if chat.stream:
            raise HTTPProblem(400, "stream=true is not supported; ask without streaming.")
        adapter, role = self.resolve(chat.model)
        greedy = chat.temperature == 0
        tokens = chat.max_completion_tokens or chat.max_tokens or self.policy.max_new_tokens
        key: Key = (adapter or "", role, greedy, chat.temperature, chat.top_p, tokens)
        messages = tuple(Message(m.role, m.text()) for m in chat.messages)
        seed = chat.seed if chat.seed is not None else random.getrandbits(31)
        futures = [
            self.batcher.submit(key, _request(messages, role, seed + i)) for i in range(chat.n)
        ]
        done = [await asyncio.wrap_future(f) for f in futures]
        return self._reply(chat.model or self.name, done, tokens)

    def _answer(self, key: Key, requests: list[Request]) -> list[Completion]:
        adapter, _role, greedy, temperature, top_p, tokens = key
        policy: Any = self.policy
        with self.lock, self.adapters.use(adapter or None):
            saved = policy.max_new_tokens, policy.temperature, policy.top_p
            policy.max_new_tokens, policy.top_p = tokens, top_p
            policy.temperature = temperature if temperature > 0 else 1.0
            try:
                return policy.act(requests, greedy=greedy)
            finally:
                policy.max_new_tokens, policy.temperature, policy.top_p = saved

    def _reply(self, model: str, done: list[Completion], tokens: int) -> dict[str, Any]:
        prompt = len(done[0].prompt_ids) if done else 0
        written = sum(len(c.token_ids) for c in done)
        choices = [
            {
                "index": i,
                "message": {"role": "assistant", "content": c.text},
                "finish_reason": "length" if len(c.token_ids) >= tokens else "stop",
            }
            for i, c in enumerate(done)
        ]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": written,
                "total_tokens": prompt + written,
            },
        }


def _request(messages: tuple[Message, ...], role: str | None, seed: int) -> Request:
    # a served chat has no game: the policy reads only the messages, the role and the rng
    return Request(None, None, role or "assistant", messages, random.Random(seed))  # type: ignore[arg-type]


def create_app(service: ChatService) -> Any:
    """The Starlette application of ``service``'s endpoints."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

    def problem(status: int, message: str) -> JSONResponse:
        kind = {400: "BadRequestError", 404: "NotFoundError"}.get(status, "InternalServerError")
        body = {"error": {"message": message, "type": kind, "code": status}}
        return JSONResponse(body, status_code=status)

    def endpoint(handler: Callable[..., Any], body: type[BaseModel] | None = None) -> Any:
        async def run(request: Any) -> Any:
            try:
                if body is None:
                    return await handler()
                return await handler(body.model_validate(await request.json()))
            except ValidationError as err:
                first = err.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "body"
                return problem(400, f"Bad request: {where}: {first['msg']}.")
            except ValueError as err:  # not JSON, or a prompt the model cannot take
                return problem(400, f"Bad request: {err}")
            except HTTPProblem as err:
                return problem(err.status, err.message)

        return run

    async def models() -> Any:
        return JSONResponse({"object": "list", "data": service.models()})

    async def chat(body: ChatRequest) -> Any:
        return JSONResponse(await service.complete(body))

    async def load(body: AdapterRequest) -> Any:
        if not body.lora_path:
            raise HTTPProblem(400, "lora_path is required: the adapter to load.")
        await asyncio.to_thread(_locked, service, service.adapters.load, body)
        return PlainTextResponse(f"Success: LoRA adapter '{body.lora_name}' added successfully.")

    async def unload(body: AdapterRequest) -> Any:
        service.adapters.unload(body.lora_name)
        return PlainTextResponse(f"Success: LoRA adapter '{body.lora_name}' removed successfully.")

    async def health() -> Any:
        return PlainTextResponse("")

    routes = [
        Route("/v1/models", endpoint(models), methods=["GET"]),
        Route("/v1/chat/completions", endpoint(chat, ChatRequest), methods=["POST"]),
        Route("/v1/load_lora_adapter", endpoint(load, AdapterRequest), methods=["POST"]),
        Route("/v1/unload_lora_adapter", endpoint(unload, AdapterRequest), methods=["POST"]),
        Route("/health", endpoint(health), methods=["GET"]),
    ]
    return Starlette(routes=routes)


def _locked(service: ChatService, load: Callable[[str, str], None], body: AdapterRequest) -> None:
    with service.lock:  # the check swaps adapters in: never while a batch runs
        load(body.lora_name, body.lora_path)
