"""A step of several micro-batches runs the preamble its prompts share once, holds its cache
and back-propagates it once (core/train/update/micro_batches.py): the same gradients as a row per
sample and as the preamble run in each micro-batch, to 1e-5 relative."""

from __future__ import annotations

import pytest
import torch

from selfplay.core.algorithms.legal_pg import LegalPolicyGradient
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.config import LoraConfig
from selfplay.core.models import prefix_scoring
from selfplay.core.models.lora import apply_lora
from selfplay.core.models.tiny import build_tiny
from selfplay.core.train.update import micro_batches
from selfplay.core.train.update.micro_batches import TokenBudget, held_length
from tests.test_shared_update import gpt2, gradient_gaps, groups, legal_choices, run_update


@pytest.fixture
def preambles_run(monkeypatch) -> list[int]:
    """The length of each preamble an update held (policy and reference alike)."""
    runs: list[int] = []
    fill = prefix_scoring.fill_cache

    def counted(model, tokens):
        runs.append(len(tokens))
        return fill(model, tokens)

    monkeypatch.setattr(micro_batches, "fill_cache", counted)
    return runs


def lora_model():
    model = build_tiny(seed=0)[0]
    torch.manual_seed(3)
    return apply_lora(model, LoraConfig(enabled=True, rank=4))


def steps(objective, data, monkeypatch, hold: bool, **kwargs):
    with monkeypatch.context() as patch:
        if not hold:
            patch.setattr(micro_batches, "MIN_HELD_TOKENS", 10**6)
        return run_update(objective(), data, True, **kwargs)


def assert_same(mine, theirs):
    assert len(mine[0]) == len(theirs[0]) > 0
    for step, (a, b) in enumerate(zip(mine[0], theirs[0], strict=True)):
        assert a.keys() == b.keys()
        gaps = gradient_gaps(a, b)
        assert max(gaps.values()) < 1e-5, (step, max(gaps.items(), key=lambda kv: kv[1]))
    for key, value in theirs[1].items():
        if "mismatch" not in key:  # measured on the first micro-batch, which differs
            assert mine[1][key] == pytest.approx(value, rel=1e-5, abs=1e-6), key


@pytest.mark.parametrize("make", [None, gpt2, lora_model], ids=["tiny", "gpt2", "lora"])
def test_a_held_preamble_takes_the_steps_of_a_row_each(make, monkeypatch, preambles_run):
    """Under LoRA the reference is the adapters swapped out in place, which must not happen
    under the held preamble's graph."""
    data = legal_choices(16)
    kwargs = {"make": make, "tokens": TokenBudget(300), "lora": make is lora_model}
    held = steps(LegalPolicyGradient, data, monkeypatch, True, **kwargs)
    assert preambles_run == [31, 31]  # the reference's, then the policy's: once for the step
    per_micro_batch = steps(LegalPolicyGradient, data, monkeypatch, False, **kwargs)
    rows = run_update(LegalPolicyGradient(), data, False, **kwargs)
    assert_same(held, rows)
    assert_same(held, per_micro_batch)
    assert held[1]["kl"] > 0  # the reference was read (under LoRA: swapped in place)


def test_each_seats_preamble_is_held_for_its_own_items(monkeypatch, preambles_run):
    """Kuhn poker's rules open with "You are playing as player_0" or "... player_1": two
    preambles, interleaved in the minibatch; each is held for the items that read it."""
    data = legal_choices(16)
    for sample in data.samples[1::2]:
        prompt = (*sample.prompt_ids[:5], 106, *sample.prompt_ids[6:])
        object.__setattr__(sample, "prompt_ids", prompt)
    kwargs = {"tokens": TokenBudget(200)}
    held = steps(LegalPolicyGradient, data, monkeypatch, True, **kwargs)
    assert preambles_run == [31, 31, 31, 31]  # each seat's: the reference's, the policy's
    assert_same(held, run_update(LegalPolicyGradient(), data, False, **kwargs))


def test_grpo_groups_hold_their_preamble_over_epochs_and_minibatches(monkeypatch, preambles_run):
    data = groups(6)
    # every prompt opens with token 1 only: nothing long enough to hold
    kwargs = {"epochs": 2, "minibatches": 2, "tokens": TokenBudget(120)}
    steps(PolicyGradient, data, monkeypatch, True, **kwargs)
    assert preambles_run == []
    shared = tuple(range(7, 40))
    for sample in data.samples:
        object.__setattr__(sample, "prompt_ids", shared + tuple(sample.prompt_ids))
    held = steps(PolicyGradient, data, monkeypatch, True, **kwargs)
    assert len(preambles_run) == 2 * 2 * 2  # two epochs of two steps, policy and reference
    assert_same(held, run_update(PolicyGradient(), data, False, **kwargs))


def test_one_micro_batch_holds_nothing(monkeypatch, preambles_run):
    steps(LegalPolicyGradient, legal_choices(6), monkeypatch, True)  # the whole minibatch
    assert preambles_run == []


def test_the_held_length_keeps_two_tokens_of_every_prompt():
    def items(*prompts):
        sample = lambda p: type("S", (), {"prompt_ids": p})  # noqa: E731
        return [type("I", (), {"samples": [sample(p)]}) for p in prompts]

    base = tuple(range(40))
    assert held_length(items((*base, 1, 2), (*base, 3))) == 39  # the shorter keeps two
    assert held_length(items((*base, 1, 2), base[:10] + (99,) * 40)) == 0  # 10 < 16
    assert held_length(items((*base, 1, 2))) == 0  # one row: nothing shared
