"""An OpenAI-compatible server over a policy held in memory (`selfplay serve`).

    GET  /v1/models                 the served model, its per-role names and loaded adapters
    POST /v1/chat/completions       messages in, a reply out (no streaming)
    POST /v1/completions            token ids in, token ids and log-probabilities out
                                    (a served learner's rollouts: core/serving/completions.py);
                                    echo=true: the prompt's own log-probabilities too
    POST /tokenize                  text, or a chat as the model reads it, in; the ids out
    POST /v1/load_lora_adapter      {"lora_name", "lora_path"}: vLLM's dynamic-LoRA protocol
    POST /v1/unload_lora_adapter    {"lora_name"}
    POST /init_weight_transfer_engine, /start_weight_update, /update_weights,
         /finish_weight_update, /pause, /resume; GET /is_paused, /get_world_size
                                    vLLM's weight-transfer routes, over a file
                                    (core/serving/weights.py)
    GET  /health                    200 once the model is loaded

Requests that arrive together are answered together (core/serving/batcher.py): a worker
thread takes whatever is waiting (up to ``max_batch`` rows, after at most ``wait`` seconds),
groups them by model and sampling settings and makes one batched call per group, so a client's
concurrent requests share the model's forward passes as in the training loop. The prompts of
one completions request are one job, never split, so they are answered as the trainer would
batch them.

Adapters (a LoRA run only: core/serving/adapters.py) are swapped into the one base model while
their requests run. A model name ``NAME:ROLE`` picks a role's adapter in a run with one
adapter per role. Starlette carries the HTTP (with uvicorn, in core/commands/serve.py: the
``serve`` extra).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from selfplay.api.policy import Policy, Request
from selfplay.api.types import Completion, Message
from selfplay.core.serving import completions as cmpl
from selfplay.core.serving.adapters import Adapters, HTTPProblem
from selfplay.core.serving.batcher import Batcher, Key
from selfplay.core.serving.weights import WeightReceiver, weight_routes


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


class ChatService:
    """The policy behind the endpoints: model names, adapters, weights and batched answers."""

    def __init__(
        self,
        policy: Policy,
        name: str,
        *,
        lora: bool = False,
        roles: Sequence[str] = (),
        max_batch: int = 32,
        weight_transfer: str | None = None,
    ) -> None:
        self.policy, self.name, self.roles = policy, name, list(roles)
        self.adapters = Adapters(policy, lora)
        self.created = int(time.time())
        self.lock = threading.Lock()
        self.batcher = Batcher(self._answer, max_batch=max_batch)
        model = getattr(policy, "model", None)
        self.weights = WeightReceiver(model, self.lock, weight_transfer)

    def models(self) -> list[dict[str, Any]]:
        ids = [self.name, *(f"{self.name}:{role}" for role in self.roles)]
        rows = [self._row(i) for i in ids]
        for adapter in self.adapters.states:
            rows += [self._row(adapter, parent=self.name)]
            rows += [self._row(f"{adapter}:{r}", parent=self.name) for r in self.roles]
        return rows

    def _row(self, model: str, parent: str | None = None) -> dict[str, Any]:
        row = {"id": model, "object": "model", "created": self.created, "owned_by": "selfplay"}
        limit = getattr(self.policy, "max_prompt_tokens", None)
        return {**row, "root": parent or model, "parent": parent, "max_model_len": limit}

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
        key: Key = ("chat", adapter or "", role, greedy, chat.temperature, chat.top_p, tokens)
        messages = tuple(Message(m.role, m.text()) for m in chat.messages)
        seed = chat.seed if chat.seed is not None else random.getrandbits(31)
        futures = [
            self.batcher.submit(key, [_request(messages, role, seed + i)]) for i in range(chat.n)
        ]
        done = [(await asyncio.wrap_future(f))[0] for f in futures]
        return self._reply(chat.model or self.name, done, tokens)

    async def completions(self, request: cmpl.CompletionRequest) -> dict[str, Any]:
        """Token ids in, token ids and log-probabilities out (core/serving/completions.py)."""
        cmpl.check_supported(request)
        adapter, role = self.resolve(request.model)
        tokenizer = self._tokenizer()
        prompts = cmpl.prompts_of(request, tokenizer)
        model = request.model or self.name
        seeds = cmpl.row_seeds(request, len(prompts), random.getrandbits(62))
        repeated = [prompt for prompt in prompts for _ in range(request.n)]
        rows = list(zip(repeated, seeds, strict=True))
        greedy = request.temperature == 0
        tokens = 16 if request.max_tokens is None else request.max_tokens
        sampling = (greedy, request.temperature, request.top_p, tokens)
        echoed = None
        if request.echo:
            key: Key = ("echo", adapter or "", role, *sampling)
            logps = await asyncio.wrap_future(self.batcher.submit(key, prompts))
            shown = tokenizer.batch_decode(prompts, skip_special_tokens=False)
            echoed = list(zip(shown, logps, strict=True))
        done: list[Any] = [([], []) for _ in rows]
        if tokens:
            key = ("completion", adapter or "", role, *sampling)
            done = await asyncio.wrap_future(self.batcher.submit(key, rows))
        texts = tokenizer.batch_decode([t for t, _ in done], skip_special_tokens=True)
        return cmpl.completion_reply(
            model, prompts, done, texts, request, tokens, self.weights.version, echoed
        )

    def tokenize(self, request: cmpl.TokenizeRequest) -> dict[str, Any]:
        self.resolve(request.model)
        limit = getattr(self.policy, "max_prompt_tokens", 0)
        self._tokenizer()  # says so when the model has none
        return cmpl.tokenize_reply(request, self.policy, limit)

    def _tokenizer(self) -> Any:
        tokenizer = getattr(self.policy, "tokenizer", None)
        if tokenizer is None:
            raise HTTPProblem(400, "This server's model has no tokenizer here.")
        return tokenizer

    def _answer(self, key: Key, rows: list[Any]) -> list[Any]:
        kind, adapter, role, greedy, temperature, top_p, tokens = key
        policy: Any = self.policy
        with self.lock, self.adapters.use(adapter or None):
            saved = policy.max_new_tokens, policy.temperature, policy.top_p
            policy.max_new_tokens, policy.top_p = tokens, top_p
            policy.temperature = temperature if temperature > 0 else 1.0
            try:
                if kind == "chat":
                    return policy.act(rows, greedy=greedy)
                context = policy.role_context(role) if policy.role_context and role else None
                if kind == "echo":
                    with context or nullcontext():
                        return cmpl.prompt_logprobs(policy, rows, policy.temperature)
                with context or nullcontext():
                    found, logps = policy.generate(
                        [p for p, _ in rows], [s for _, s in rows], greedy=greedy
                    )
                return list(zip(found, logps, strict=True))
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


def problem(status: int, message: str) -> Any:
    """An error response in OpenAI's form: ``{"error": {"message", "type", "code"}}``."""
    from starlette.responses import JSONResponse

    kind = {400: "BadRequestError", 404: "NotFoundError"}.get(status, "InternalServerError")
    body = {"error": {"message": message, "type": kind, "code": status}}
    return JSONResponse(body, status_code=status)


def endpoint(handler: Callable[..., Any], body: type[BaseModel] | None = None) -> Any:
    """A route's function: ``handler`` called with the request's JSON read as ``body``; a
    body that does not validate, or a problem the handler raises, answers in OpenAI's form."""

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


def create_app(service: ChatService) -> Any:
    """The Starlette application of ``service``'s endpoints."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, PlainTextResponse
    from starlette.routing import Route

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

    async def completions(body: cmpl.CompletionRequest) -> Any:
        return JSONResponse(await service.completions(body))

    async def tokenize(body: cmpl.TokenizeRequest) -> Any:
        return JSONResponse(service.tokenize(body))

    routes = [
        Route("/v1/models", endpoint(models), methods=["GET"]),
        Route("/v1/chat/completions", endpoint(chat, ChatRequest), methods=["POST"]),
        Route("/v1/completions", endpoint(completions, cmpl.CompletionRequest), methods=["POST"]),
        Route("/tokenize", endpoint(tokenize, cmpl.TokenizeRequest), methods=["POST"]),
        Route("/v1/load_lora_adapter", endpoint(load, AdapterRequest), methods=["POST"]),
        Route("/v1/unload_lora_adapter", endpoint(unload, AdapterRequest), methods=["POST"]),
        Route("/health", endpoint(health), methods=["GET"]),
        *weight_routes(service.weights, service.batcher, endpoint),
    ]
    return Starlette(routes=routes)


def _locked(service: ChatService, load: Callable[[str, str], None], body: AdapterRequest) -> None:
    with service.lock:  # the check swaps adapters in: never while a batch runs
        load(body.lora_name, body.lora_path)
