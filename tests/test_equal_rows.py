"""Equal rows are scored once in the update: the same gradients, fewer rows through the model.

At Kuhn poker a SmolLM2 iteration's 64 decisions are a dozen prompts, and every tic-tac-toe
match opens at the empty board; the update scores each (prompt, answer) once, spreads its
values back to every row that has it, and packs its micro-batches counting a repeated row as
free (`distinct_rows`). Under dropout equal rows differ, and every row is scored.
"""

from __future__ import annotations

import random

import torch

from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.models.tiny import build_tiny
from selfplay.core.train.update.micro_batches import TokenBudget, distinct_rows, pack_by_tokens
from selfplay.core.train.update.updater import Updater


def repeated_samples(kinds: int, copies: int) -> list[Sample]:
    """``kinds`` different (prompt, answer) rows, each ``copies`` times, with other rewards."""
    rng = random.Random(0)
    rows = []
    for _ in range(kinds):
        prompt = (1, *(rng.randrange(7, 100) for _ in range(rng.randint(3, 9))))
        rows.append((prompt, (rng.randrange(7, 100), 2)))
    out = [
        Sample("g", "r", prompt, answer, (-1.0, -1.0), rng.uniform(-1, 1), prompt)
        for _ in range(copies)
        for prompt, answer in rows
    ]
    rng.shuffle(out)
    return out


def one_step(once: bool, dropout: float = 0.0) -> tuple[torch.Tensor, int]:
    """The gradient of one step over repeated rows, and how many rows the model read."""
    model = build_tiny(seed=0)[0]
    model.config.attention_dropout = dropout
    rows = []
    model.register_forward_hook(lambda m, args, kwargs, out: rows.append(len(kwargs["input_ids"])),
                                with_kwargs=True)  # fmt: skip
    objective = PolicyGradient(kl_coef=0.0)
    data = repeated_samples(kinds=5, copies=6)
    items = objective.prepare(IterationData(data, [s.reward for s in data]))
    grads = []
    updater = Updater(
        model, torch.optim.SGD(model.parameters(), lr=0.0), objective, 0,
        backward=lambda loss: (loss.backward(), grads.append(1)),
        clip_gradients=lambda m, o, max_norm: torch.tensor(0.0),
        score_equal_once=None if dropout else once, share_prefixes=False,
    )  # fmt: skip
    torch.manual_seed(0)
    updater.update(items, torch.Generator().manual_seed(0), minibatches=1)
    gradient = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return gradient, sum(rows)


def test_equal_rows_give_the_same_gradient_from_fewer_rows():
    each, every_row = one_step(once=False)
    once, distinct = one_step(once=True)
    assert every_row == 30 and distinct == 5  # a row each: share_prefixes=False
    assert torch.allclose(once, each, rtol=1e-5, atol=1e-7)
    assert once.abs().sum() > 0


def test_under_dropout_every_row_is_scored():
    _, rows = one_step(once=True, dropout=0.1)
    assert rows == 30


def test_distinct_rows_names_the_first_of_each_kind():
    prompts, answers = [(1, 2), (1, 3), (1, 2), (1, 2)], [(5,), (5,), (5,), (6,)]
    assert distinct_rows(prompts, answers) == ([0, 1, 3], [0, 1, 0, 2])
    assert distinct_rows(prompts[:2], answers[:2]) is None


def test_a_repeated_row_costs_nothing_in_the_micro_batches():
    objective = PolicyGradient(kl_coef=0.0)
    data = repeated_samples(kinds=2, copies=20)
    data.sort(key=lambda s: s.prompt_ids)
    items = objective.prepare(IterationData(data, [s.reward for s in data]))
    budget = TokenBudget(tokens=40)
    assert len(pack_by_tokens(items, budget, once=True)) == 1
    assert len(pack_by_tokens(items, budget)) > 5


def test_equal_requests_are_scored_once_in_play():
    """The legal choice scores a position's menu once however many matches stand there."""
    from selfplay.api.policy import Request
    from selfplay.core.models.policy_table import score_answers
    from selfplay.core.models.tiny import load_tiny_policy
    from selfplay.games.kuhn_poker import KuhnPoker

    game, policy = KuhnPoker(), load_tiny_policy(choice="legal")
    rng = random.Random(0)
    states = [game.reset(seed) for seed in range(6)]  # six deals: three cards for player_0
    requests = [
        Request(game, s, "player_0", tuple(game.observe(s, "player_0")), rng) for s in states
    ]
    prompts = policy.encode(requests)
    menus = [["[check]", "[bet]"]] * len(prompts)
    rows = []
    policy.model.register_forward_hook(
        lambda m, args, kwargs, out: rows.append(len(kwargs["input_ids"])), with_kwargs=True
    )
    _, once = score_answers(policy, prompts, menus, 1.0)
    read = sum(rows)
    kinds = list({tuple(p): p for p in prompts}.values())
    assert len(kinds) < len(prompts) and len(once) == 2 * len(prompts)
    rows.clear()
    score_answers(policy, kinds, menus[: len(kinds)], 1.0)
    assert read == sum(rows)  # as many rows through the model as the distinct requests take
    _, each = score_answers(policy, prompts, menus, 1.0, shared_prompts=False)
    assert torch.allclose(once, each, atol=1e-5)
