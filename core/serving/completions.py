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

``echo: true`` with ``max_tokens: 0`` and ``logprobs: 0`` scores the prompts instead of
continuing them, as vLLM's completions route does: each choice's ``token_ids`` are its
prompt's, and ``token_logprobs`` the log-probability of each prompt token given those before it
(the first is null), under the request's temperature. A served learner under
``generation.choice: legal`` reads each legal answer's score this way (prompt + answer in one
row; core/serving/rollout_client.py). Echo while writing new tokens is not supported.

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
    if request.echo and (request.max_tokens != 0 or request.n != 1):
        raise Unsupported(
            "echo=true is supported with max_tokens=0 and n=1 (the prompt's log-probabilities, "
            "nothing written); ask for new tokens without echo."
        )
    if not request.echo and request.max_tokens == 0:
        raise Unsupported("max_tokens=0 writes nothing; it is for echo=true (prompt scores).")
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


def echo_logprobs(policy: Any, prompts: Sequence[Sequence[int]], temperature: float) -> list:
    """Each prompt token's log-probability given the tokens before it (None for the first),
    under ``temperature``: one forward pass over the rows, no grad."""
    from contextlib import nullcontext

    import torch

    from selfplay.core.models.scoring import score

    model = policy.model
    was_training = model.training
    model.eval()
    try:
        context = policy.forward_context or nullcontext
        with torch.inference_mode(), context():
            heads, tails = [p[:1] for p in prompts], [p[1:] for p in prompts]
            single = [i for i, tail in enumerate(tails) if not tail]
            scored = score(
                model,
                heads,
                [t or [policy.pad_id] for t in tails],
                policy.pad_id,
                temperature,
                False,
            )
    finally:
        model.train(was_training)
    values = (scored.logp.float() * scored.mask).cpu().tolist()
    return [
        [None] + ([] if i in single else values[i][: len(tails[i])]) for i in range(len(prompts))
    ]


def echo_reply(
    model: str,
    prompts: Sequence[Sequence[int]],
    logps: Sequence[Sequence[float | None]],
    texts: Sequence[str],
    request: CompletionRequest,
    version: int,
) -> dict[str, Any]:
    """The response body of an echo request: each prompt back with its log-probabilities."""
    choices = []
    as_ids = bool(request.return_tokens_as_token_ids)
    for index, (prompt, values, text) in enumerate(zip(prompts, logps, texts, strict=True)):
        shown = [f"token_id:{t}" if as_ids else str(t) for t in prompt]
        choice: dict[str, Any] = {
            "index": index,
            "text": text,
            "finish_reason": "length",
            "stop_reason": None,
            "logprobs": None,
        }
        if request.logprobs is not None:
            choice["logprobs"] = {
                "tokens": shown,
                "token_logprobs": list(values),
                "top_logprobs": [
                    None if v is None else {s: v} for s, v in zip(shown, values, strict=True)
                ]
                if request.logprobs
                else None,
                "text_offset": [0] * len(prompt),
            }
        if request.return_token_ids:
            choice["token_ids"] = list(prompt)
            choice["prompt_token_ids"] = list(prompt)
        choices.append(choice)
    prompt_tokens = sum(len(p) for p in prompts)
    return {
        "id": f"cmpl-{uuid.uuid4().hex[:24]}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 0,
            "total_tokens": prompt_tokens,
        },
        "selfplay": {"policy_version": version},
    }


def tokenize_reply(request: TokenizeRequest, tokenizer: Any, limit: int) -> dict[str, Any]:
    ids = tokenizer(request.prompt, add_special_tokens=request.add_special_tokens)["input_ids"]
    return {"tokens": list(ids), "count": len(ids), "max_model_len": limit}
