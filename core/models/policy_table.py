"""A language policy read as a table: its probability of each legal action at each information set.

For games small enough to list their information sets (Kuhn poker has 12), exploitability can
be computed exactly, but only of a tabular policy. The model's table is scored, not sampled:
at each information set, the log-probability of the complete answer that plays each legal
action (its text, then end-of-sequence), normalised over the legal actions. Sampling
temperature applies as in generation.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

from selfplay.api.policy import Request
from selfplay.api.tabular import InfoSet, TabularGame, answer_text
from selfplay.core.models.scoring import score
from selfplay.core.train.cold_start import eos_id

Table = dict[str, dict[str, float]]


def is_tabular(game: Any) -> bool:
    return isinstance(game, TabularGame)


@torch.no_grad()
def policy_table(policy: Any, game: TabularGame, temperature: float = 1.0) -> Table:
    """``{info set key: {action: probability}}`` of an `HFPolicy` (see the module doc)."""
    infos = game.information_sets()
    table: Table = {}
    for role in sorted({info.role for info in infos}):
        mine = [info for info in infos if info.role == role]
        context = policy.role_context(role) if policy.role_context is not None else None
        if context is None:
            table.update(_score_role(policy, game, mine, temperature))
        else:
            with context:
                table.update(_score_role(policy, game, mine, temperature))
    return table


def _score_role(policy: Any, game: Any, infos: Sequence[InfoSet], temperature: float) -> Table:
    rng = random.Random(0)  # unused by language policies; a Request needs one
    requests = [
        Request(game, info.state, info.role, tuple(game.observe(info.state, info.role)), rng)
        for info in infos
    ]
    prompts = policy.encode(requests)
    texts = [answer_text(game, a) for info in infos for a in info.actions]
    encoded = policy.tokenizer(texts, add_special_tokens=False)["input_ids"]
    stop = eos_id(policy)
    rows_prompt, rows_action = [], []
    k = 0
    for prompt, info in zip(prompts, infos, strict=True):
        for _ in info.actions:
            rows_prompt.append(prompt)
            rows_action.append([*encoded[k], stop])
            k += 1
    model = policy.model
    was_training = model.training
    model.eval()
    try:
        scored = score(model, rows_prompt, rows_action, policy.pad_id, temperature, False)
    finally:
        model.train(was_training)
    totals = (scored.logp * scored.mask).sum(-1)
    table: Table = {}
    k = 0
    for info in infos:
        n = len(info.actions)
        probs = torch.softmax(totals[k : k + n].double(), dim=0).tolist()
        table[info.key] = dict(zip(info.actions, probs, strict=True))
        k += n
    return table
