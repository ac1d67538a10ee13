"""``/v1/completions`` and ``/tokenize``: token ids in, token ids and log-probabilities out.

This is what a served learner needs of a server, and the fields are vLLM's:

    POST /v1/completions  {"model", "prompt": [ids] | [[ids], ...] | text | [texts],
                           "max_tokens": 16, "temperature", "top_p", "seed", "n",
                           "logprobs": 0, "return_token_ids": true,
                           "return_tokens_as_token_ids": false}
      -> {"choices": [{"index", "text", "token_ids", "prompt_token_ids", "finish_reason",
                       "logprobs": {"tokens", "token_logprobs", "top_logprobs",
                                    "text_offset"}}], "usage", ...}
    POST /tokenize        {"model", "prompt", "add_special_tokens"} -> {"tokens", "count"}
                          or {"model", "messages", "add_generation_prompt": true,
                          "continue_final_message": false}: the chat as the model reads it

``echo: true`` (vLLM's) returns the prompt with its tokens' log-probabilities before any new
ones (the first prompt token's is null); with ``max_tokens: 0`` the prompt alone. This is how
a client scores a fixed answer: the prompt and the answer as one prompt, the answer's
log-probabilities summed (a served model's policy table, core/models/served/table.py; a
served learner's legal choice, core/serving/legal_choice.py). As vLLM's, ``token_ids`` are the
new tokens only (none with ``max_tokens: 0``) and ``prompt_token_ids`` the prompt's. A
chat tokenized with a closed last assistant message (``add_generation_prompt: false``, not
continued) ends as the model's own turn ends: its text, then the end-of-sequence token
generation stops at.

Each choice's ``token_ids`` include the end-of-sequence token a row stopped at (as vLLM's
do), and ``token_logprobs`` are the log-probabilities of those tokens under the temperature-
scaled distribution (vLLM's ``--logprobs-mode processed_logprobs`` at ``top_p`` 1).

One extension, which vLLM ignores: ``seed`` may be a list, one seed per prompt, so that one
request carries a batch of matches and each samples from its own noise (with vLLM, send one
prompt per request, each with its seed; the server batches concurrent requests). A request's
prompts are answered in one batch, never split, so the same request gives the same tokens as
the trainer's own generation of that batch.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

Prompt = list[int] | list[list[int]] | str | list[str]


class CompletionRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    prompt: Prompt
    max_tokens: int | None = Field(default=16, ge=0)
    temperature: float = Field(default=1.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    seed: int | list[int] | None = None
    n: int = Field(default=1, ge=1, le=64)
    logprobs: int | None = Field(default=None, ge=0, le=20)
    return_token_ids: bool | None = None
    return_tokens_as_token_ids: bool | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    echo: bool = False

    @field_validator("prompt")
    @classmethod
    def _not_empty(cls, value: Prompt) -> Prompt:
        if not value or (isinstance(value, list) and any(not p for p in value)):
            raise ValueError("every prompt needs at least one token or character")
        return value


class TokenizeRequest(BaseModel):
    """vLLM's two forms: ``prompt`` (text), or ``messages`` (a chat, rendered as the model
    reads it)."""

    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    prompt: str | None = None
    messages: list[dict[str, Any]] | None = None
    add_special_tokens: bool = True
    add_generation_prompt: bool = True
    continue_final_message: bool = False

    @field_validator("messages")
    @classmethod
    def _chat(cls, value: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for message in value or []:
            if message.get("role") not in ("system", "user", "assistant"):
                raise ValueError("each message needs a role: system, user or assistant")
            if not isinstance(message.get("content"), str):
                raise ValueError("each message needs its content as text")
        return value


class Unsupported(ValueError):
    """A completion request asks for something this server does not do (a 400)."""


def prompts_of(request: CompletionRequest, tokenizer: Any) -> list[list[int]]:
    """The request's prompts as token ids (text is encoded with the served tokenizer)."""
    prompt = request.prompt
    if isinstance(prompt, str):
        prompt = [prompt]
    if isinstance(prompt[0], int):
        return [list(prompt)]  # type: ignore[arg-type]
    if isinstance(prompt[0], str):
        encoded = tokenizer(list(prompt), add_special_tokens=True, return_attention_mask=False)
        return [list(ids) for ids in encoded["input_ids"]]
    return [list(ids) for ids in prompt]  # type: ignore[union-attr]


def check_supported(request: CompletionRequest) -> None:
    if request.stream:
        raise Unsupported("stream=true is not supported; ask without streaming.")
    if request.max_tokens == 0 and not request.echo:
        raise Unsupported("max_tokens=0 asks for nothing: it needs echo=true (the prompt back).")
    if request.stop:
        raise Unsupported(
            "stop strings are not supported: a row stops at the model's end-of-sequence token "
            "or after max_tokens."
        )


def row_seeds(request: CompletionRequest, rows: int, fallback: int) -> list[int]:
    """One sampling seed per row (prompt x n): the request's list, or its one seed counted
    up, or ``fallback`` counted up when it gives none."""
    if isinstance(request.seed, list):
        if request.n != 1 or len(request.seed) != rows:
            raise Unsupported(
                f"seed is a list of {len(request.seed)}, but the request has {rows} prompts "
                f"(n={request.n}): give one seed per prompt, with n=1."
            )
        return [int(s) % (1 << 63) for s in request.seed]
    base = fallback if request.seed is None else int(request.seed)
    return [(base + i) % (1 << 63) for i in range(rows * request.n)]


def completion_reply(
    model: str,
    prompts: Sequence[Sequence[int]],
    rows: Sequence[tuple[list[int], list[float]]],
    texts: Sequence[str],
    request: CompletionRequest,
    max_tokens: int,
    version: int,
    echoed: Sequence[tuple[str, list[float | None]]] | None = None,
) -> dict[str, Any]:
    """The response body: one choice per row, in the order of the prompts (times n); with
    ``echoed`` (each prompt's text and token log-probabilities) the prompt comes first."""
    choices = []
    as_ids = bool(request.return_tokens_as_token_ids)
    for index, ((tokens, logps), text) in enumerate(zip(rows, texts, strict=True)):
        prompt = prompts[index // request.n]
        shown_ids: list[int] = list(tokens)
        shown_logps: list[float | None] = list(logps)
        if echoed is not None:
            echo_text, echo_logps = echoed[index // request.n]
            text = echo_text + text
            shown_ids, shown_logps = [*prompt, *tokens], [*echo_logps, *logps]
        choice: dict[str, Any] = {
            "index": index,
            "text": text,
            "finish_reason": "length" if len(tokens) >= max_tokens else "stop",
            "stop_reason": None,
            "logprobs": None,
        }
        if request.logprobs is not None:
            shown = [f"token_id:{t}" if as_ids else str(t) for t in shown_ids]
            choice["logprobs"] = {
                "tokens": shown,
                "token_logprobs": shown_logps,
                "top_logprobs": [
                    None if lp is None else {s: lp}
                    for s, lp in zip(shown, shown_logps, strict=True)
                ]
                if request.logprobs
                else None,
                "text_offset": [0] * len(shown_ids),
            }
        if request.return_token_ids:
            choice["token_ids"] = list(tokens)
            choice["prompt_token_ids"] = list(prompt)
        choices.append(choice)
    prompt_tokens = sum(len(p) for p in prompts) * request.n
    written = sum(len(tokens) for tokens, _ in rows)
    return {
        "id": f"cmpl-{uuid.uuid4().hex[:24]}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": written,
            "total_tokens": prompt_tokens + written,
        },
        "selfplay": {"policy_version": version},
    }


def tokenize_reply(request: TokenizeRequest, policy: Any, limit: int) -> dict[str, Any]:
    """The ids of ``request``'s text, or of its chat as ``policy`` reads it (`chat_ids`)."""
    if (request.prompt is None) == (request.messages is None):
        raise Unsupported("give the text to tokenize as prompt, or a chat as messages.")
    if request.messages is not None:
        ids = chat_ids(policy, request)
    else:
        encoded = policy.tokenizer(request.prompt, add_special_tokens=request.add_special_tokens)
        ids = list(encoded["input_ids"])
    return {"tokens": ids, "count": len(ids), "max_model_len": limit}


def chat_ids(policy: Any, request: TokenizeRequest) -> list[int]:
    """A chat's ids as the policy reads it: its prompt, ready for a reply (or continuing a last
    assistant message); a closed last assistant message is the reply itself, then the
    end-of-sequence token its generation stops at."""
    import random

    from selfplay.api.policy import Request
    from selfplay.api.types import Message
    from selfplay.core.models.scoring import eos_id

    messages = [Message(m["role"], m["content"]) for m in request.messages or []]
    if not messages:
        raise Unsupported("messages is empty: give at least one message.")
    last = messages[-1].role == "assistant"
    if request.continue_final_message and (request.add_generation_prompt or not last):
        raise Unsupported(
            "continue_final_message continues a last assistant message, without "
            "add_generation_prompt: send add_generation_prompt=false and end with the assistant."
        )
    if request.add_generation_prompt and last:
        raise Unsupported(
            "the chat ends with an assistant message: close it (add_generation_prompt=false) "
            "or continue it (continue_final_message=true)."
        )

    def encode(chat: list[Message]) -> list[int]:
        row = Request(None, None, "assistant", tuple(chat), random.Random(0))  # type: ignore[arg-type]
        return list(policy.encode([row])[0])

    if not last or request.continue_final_message:
        return encode(messages)
    reply = policy.tokenizer(messages[-1].content, add_special_tokens=False)["input_ids"]
    return [*encode(messages[:-1]), *reply, eos_id(policy)]


def prompt_logprobs(
    policy: Any, prompts: Sequence[Sequence[int]], temperature: float
) -> list[list[float | None]]:
    """Each prompt token's log-probability given the ones before it (None for the first),
    under the temperature-scaled distribution, as ``echo`` returns them; one forward pass."""
    from contextlib import nullcontext

    import torch

    from selfplay.core.models.scoring import score

    scored_rows = [i for i, p in enumerate(prompts) if len(p) > 1]
    found: list[list[float | None]] = [[None] for _ in prompts]
    if not scored_rows:
        return found
    model = policy.model
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode(), (policy.forward_context or nullcontext)():
            scored = score(
                model,
                [prompts[i][:1] for i in scored_rows],
                [prompts[i][1:] for i in scored_rows],
                policy.pad_id,
                temperature,
                False,
            )
    finally:
        model.train(was_training)
    logp = scored.logp.float().cpu()
    for k, i in enumerate(scored_rows):
        found[i] = [None, *logp[k, : len(prompts[i]) - 1].tolist()]
    return found
