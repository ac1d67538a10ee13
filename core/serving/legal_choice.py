"""The legal choice on rollout servers: a served learner scores each legal answer there.

Under ``generation.choice: legal`` the learner does not write its move: it scores every legal
answer b (its tokens, then end-of-sequence) and plays one with probability q(b) =
softmax_b(log pi(b | x) / T) (core/models/policy_table.py). Served, each (prompt, answer)
row is sent to the servers' completions route with ``echo: true, max_tokens: 0`` (vLLM's
prompt log-probabilities; `selfplay serve` answers it: core/serving/completions.py), the
answer's last tokens' log-probabilities are summed, and the answer is drawn from the row's
own seed exactly as in-process (the same Gumbel-max draw), so a run in turn chooses as the
in-process run does, to the servers' rounding. Each choice records log q(chosen) under the
version that chose it (`Completion.choice_logprob`), which ``legal-pg`` corrects with when
that version is older than the update's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from selfplay.api.policy import Request
from selfplay.api.types import Completion
from selfplay.core.models.policy_table import _pick, legal_answers
from selfplay.core.models.scoring import eos_id


def choose_served(
    learner: Any,
    requests: Sequence[Request],
    prompts: Sequence[list[int]],
    seeds: Sequence[int],
    sampling: dict[str, Any],
    greedy: bool,
) -> list[Completion]:
    """Requests whose game lists every legal answer choose one, scored on the servers; the
    others are written there."""
    local = learner.encoder
    menus = [legal_answers(req) for req in requests]
    out: list[Completion | None] = [None] * len(requests)
    free = [i for i, menu in enumerate(menus) if not menu]
    if free:
        written = learner.write([prompts[i] for i in free], [seeds[i] for i in free], sampling)
        for i, completion in zip(free, written, strict=True):
            out[i] = completion
    listed = [i for i, menu in enumerate(menus) if menu]
    if not listed:
        return out  # type: ignore[return-value]
    texts = sorted({answer for i in listed for answer in menus[i]})
    encoded = local.tokenizer(texts, add_special_tokens=False)["input_ids"]
    stop = eos_id(local)
    tokens_of = {text: [*ids, stop] for text, ids in zip(texts, encoded, strict=True)}
    rows = [([*prompts[i], *tokens_of[a]], 0) for i in listed for a in menus[i]]
    scored = learner.workers.generate(rows, {"temperature": local.temperature}, ask="echo")
    k = 0
    for i in listed:
        menu = menus[i]
        answers = [tokens_of[a] for a in menu]
        logps = [scored[k + j][1][-len(answer) :] for j, answer in enumerate(answers)]
        totals = torch.stack([torch.tensor(lp, dtype=torch.float32).sum() for lp in logps])
        pick = _pick(totals, seeds[i], greedy)
        out[i] = Completion(
            text=menu[pick],
            token_ids=tuple(answers[pick]),
            logprobs=tuple(logps[pick]),
            prompt_ids=tuple(prompts[i]),
            menu=tuple(menu),
            choice_logprob=float(torch.log_softmax(totals.double(), 0)[pick]),
        )
        k += len(menu)
    return out  # type: ignore[return-value]
