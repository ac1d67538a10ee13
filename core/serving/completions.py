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
    max_tokens: int | None = Field(default=16, ge=1)
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
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    prompt: str
    add_special_tokens: bool = True


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
    if request.echo:
        raise Unsupported("echo=true is not supported.")
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
) -> dict[str, Any]:
    """The response body: one choice per row, in the order of the prompts (times n)."""
    choices = []
    as_ids = bool(request.return_tokens_as_token_ids)
    for index, ((tokens, logps), text) in enumerate(zip(rows, texts, strict=True)):
        choice: dict[str, Any] = {
            "index": index,
            "text": text,
            "finish_reason": "length" if len(tokens) >= max_tokens else "stop",
            "stop_reason": None,
            "logprobs": None,
        }
        if request.logprobs is not None:
            shown = [f"token_id:{t}" if as_ids else str(t) for t in tokens]
            choice["logprobs"] = {
                "tokens": shown,
                "token_logprobs": list(logps),
                "top_logprobs": [{s: lp} for s, lp in zip(shown, logps, strict=True)]
                if request.logprobs
                else None,
                "text_offset": [0] * len(tokens),
            }
        if request.return_token_ids:
            choice["token_ids"] = list(tokens)
            choice["prompt_token_ids"] = list(prompts[index // request.n])
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


def tokenize_reply(request: TokenizeRequest, tokenizer: Any, limit: int) -> dict[str, Any]:
    ids = tokenizer(request.prompt, add_special_tokens=request.add_special_tokens)["input_ids"]
    return {"tokens": list(ids), "count": len(ids), "max_model_len": limit}
