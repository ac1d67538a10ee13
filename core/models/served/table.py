"""A served model's policy table, read from the server's log-probabilities of each answer.

Exact exploitability (Kuhn poker's) needs the policy as a table: its probability of each
legal action at each information set. A model in memory is scored directly
(core/models/policy_table.py); a served one is scored through the OpenAI-compatible protocol
as vLLM implements it, which `selfplay serve` implements too:

1. ``POST /tokenize {"messages"}``: the information set's prompt, as the served model reads
   it (its chat template), ready for the reply; and the same chat closed by each legal answer
   as the assistant's message (``add_generation_prompt: false``), which ends as the model's
   turn ends (its end-of-turn token);
2. ``POST /v1/completions {"prompt": [those ids], "echo": true, "logprobs": 0,
   "max_tokens": 0}``: the log-probability of every prompt token given the ones before it
   (every row in one request to `selfplay serve`, one row per request to any other server);
3. an answer's log-probability is the sum over its own tokens (those past the prompt, the
   end of the turn included, what the template writes after it left out: ChatML's newline
   after ``<|im_end|>``, which the model never generates, read from the chat closed by an
   empty answer), and the table's row is their softmax over the legal answers.

This is the quantity the in-memory table computes (each complete answer then the
end-of-sequence token, normalised over the legal answers), so a run served by `selfplay
serve` gives the same table to float rounding. ``temperature`` scales the log-probabilities
on `selfplay serve` (as its generated tokens' are); vLLM reports the model's own
(``--logprobs-mode raw_logprobs``, its default) unless told ``processed_logprobs``. A hosted
API without ``/tokenize`` or ``echo`` (OpenAI's own) cannot be read as a table: the error says
so, and the suite's exploitability is left out with a note.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from selfplay.api.game import InfoSet, answer_text
from selfplay.api.types import Message
from selfplay.core.models.served.policy import ServedError, ServedPolicy

Table = dict[str, dict[str, float]]


def served_table(policy: ServedPolicy, game: Any, temperature: float = 1.0) -> Table:
    """``{info set key: {action: probability}}`` of a served model (see the module doc)."""
    infos = game.information_sets()
    rows: list[list[int]] = []
    spans: list[tuple[int, int]] = []  # where each row's answer begins and ends
    for info in infos:
        prompt, answers, after = _rows(policy, game, info)
        for full in answers:
            if full[: len(prompt)] != prompt or len(full) == len(prompt):
                raise ServedError(
                    f"{policy.spec.spec}: the chat closed by an answer does not extend the "
                    "prompt's tokens, so the answer's own tokens cannot be told apart; its "
                    "chat template rewrites earlier turns."
                )
            rows.append(full)
            spans.append((len(prompt), len(full) - after))
    logps = _echo(policy, rows, temperature)
    table: Table = {}
    k = 0
    for info in infos:
        totals = [sum(logps[k + i][slice(*spans[k + i])]) for i in range(len(info.actions))]
        top = max(totals)
        weights = [math.exp(t - top) for t in totals]
        table[info.key] = {a: w / sum(weights) for a, w in zip(info.actions, weights, strict=True)}
        k += len(info.actions)
    return table


def _rows(policy: ServedPolicy, game: Any, info: InfoSet) -> tuple[list[int], list[list[int]], int]:
    """The prompt's ids, the ids of the chat closed by each legal answer, and how many ids
    each of those ends with past the end-of-turn token."""
    messages = list(game.observe(info.state, info.role))
    prefill = ""
    if messages and messages[-1].role == "assistant":  # an answer prefix: continue it
        prefill = messages.pop().content
        prompt = _tokenize(policy, [*messages, Message("assistant", prefill)], "continue")
    else:
        prompt = _tokenize(policy, messages, "open")
    answers = [
        _tokenize(policy, [*messages, Message("assistant", prefill + answer_text(game, a))])
        for a in info.actions
    ]
    empty = _tokenize(policy, [*messages, Message("assistant", prefill)])
    return prompt, answers, _past_the_turn(prompt, empty, answers)


def _past_the_turn(prompt: list[int], empty: list[int], answers: list[list[int]]) -> int:
    """How many ids the chat template writes after the end-of-turn token: those of the chat
    closed by an empty answer past the prompt and its first id (the end of the turn), when
    every answer's chat ends with them too; else 0."""
    after = empty[len(prompt) + 1 :]
    if empty[: len(prompt)] != prompt or not after:
        return 0
    return len(after) if all(full[-len(after) :] == after for full in answers) else 0


def _tokenize(policy: ServedPolicy, messages: Sequence[Message], turn: str = "close") -> list[int]:
    """A chat's ids: ready for the reply (``open``), continuing the last assistant message
    (``continue``), or with it as the whole reply (``close``)."""
    body: dict[str, Any] = {
        "model": policy.model_name(),
        "messages": [m.as_dict() for m in messages],
        "add_generation_prompt": turn == "open",
        "continue_final_message": turn == "continue",
    }
    reply = _root(policy).post("tokenize", body)
    tokens = reply.get("tokens") if isinstance(reply, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        raise ServedError(
            f"{policy.spec.spec}: /tokenize gave no token ids for a chat ({str(reply)[:200]}); "
            "a policy table needs a server that tokenizes chats (vLLM, selfplay serve)."
        )
    return tokens


def _echo(policy: ServedPolicy, rows: list[list[int]], temperature: float) -> list[list[float]]:
    """Each row's prompt log-probabilities: `selfplay serve` takes every row in one request,
    any other server one request per row, in turn (vLLM 0.32's CPU engine, started with
    ``--enable-lora``, dies when prompts asking for log-probabilities share a step:
    docs/serving.md, "A real vLLM server")."""
    body = {
        "model": policy.model_name(),
        "echo": True,
        "logprobs": 0,
        "max_tokens": 0,
        "temperature": temperature,
    }
    listed = policy.request("GET", "models").get("data") or []
    owners = {row.get("owned_by") for row in listed}
    if "vllm" in owners and temperature != 1.0:
        raise ServedError(
            f"{policy.spec.spec} is a vLLM, whose prompt log-probabilities are the model's "
            "own, never divided by the temperature (vLLM 0.32, in any --logprobs-mode), so "
            f"its table at temperature {temperature:g} cannot be read there; measure it at "
            "generation.temperature=1."
        )
    ours = "selfplay" in owners
    found: list[list[float]] = []
    for asked in [rows] if ours else [[row] for row in rows]:
        found += _echoed(policy, policy.post("completions", {**body, "prompt": asked}), asked)
    return found


def _echoed(policy: ServedPolicy, reply: Any, rows: list[list[int]]) -> list[list[float]]:
    try:
        choices = sorted(reply["choices"], key=lambda c: c["index"])
        found = [c["logprobs"]["token_logprobs"] for c in choices]
    except (KeyError, TypeError):
        found = None
    if (
        found is None
        or len(found) != len(rows)
        or any(len(f) != len(r) for f, r in zip(found, rows, strict=True))
    ):
        raise ServedError(
            f"{policy.spec.spec}: /v1/completions with echo=true gave no log-probability for "
            f"each prompt token ({str(reply)[:200]}); a policy table needs them."
        )
    return [[0.0 if lp is None else float(lp) for lp in f] for f in found]


def _root(policy: ServedPolicy) -> ServedPolicy:
    """The same server at its root, where vLLM (and selfplay serve) answer /tokenize."""
    return ServedPolicy(policy.spec.at_root(), name=policy.name)
