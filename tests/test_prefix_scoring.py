"""score_menus reads each prompt once and agrees with scoring every (prompt, answer) row."""

from __future__ import annotations

import random

import pytest
import torch

from selfplay.core.models import prefix_scoring
from selfplay.core.models.prefix_scoring import score_menus
from selfplay.core.models.scoring import score
from selfplay.core.models.tiny import build_tiny


def rows_scored(model, prompts, answers, pad_id, temperature):
    """The reference: each (prompt, answer) pair packed into a row of its own."""
    flat_prompts = [p for p, menu in zip(prompts, answers, strict=True) for _ in menu]
    flat_answers = [a for menu in answers for a in menu]
    with torch.inference_mode():
        scored = score(model, flat_prompts, flat_answers, pad_id, temperature, False)
    return scored.logp.float() * scored.mask


def menus(seed: int, vocab: int):
    """Prompts of unequal lengths, menus of one to four answers of one to four tokens."""
    rng = random.Random(seed)
    prompts = [[rng.randrange(3, vocab) for _ in range(rng.randint(2, 30))] for _ in range(9)]
    answers = [
        [
            [rng.randrange(3, vocab) for _ in range(rng.randint(1, 4))]
            for _ in range(rng.randint(1, 4))
        ]
        for _ in prompts
    ]
    return prompts, answers


@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("chunk_tokens", [4096, 40])  # one chunk; a chunk of a prompt or two
def test_score_menus_agrees_with_a_row_per_answer(monkeypatch, temperature, chunk_tokens):
    monkeypatch.setattr(prefix_scoring, "TOKENS_PER_CHUNK", chunk_tokens)
    model, tokenizer = build_tiny(seed=0)
    model.eval()
    prompts, answers = menus(1, tokenizer.vocab_size)
    expected = rows_scored(model, prompts, answers, tokenizer.pad_token_id, temperature)
    got = score_menus(model, prompts, answers, tokenizer.pad_token_id, temperature)
    assert got.shape == expected.shape
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()
    lengths = [len(a) for menu in answers for a in menu]
    for row, n in enumerate(lengths):  # zero past each answer's end, something before it
        assert got[row, n:].abs().sum() == 0 and (got[row, :n] < 0).all()


def test_score_menus_sees_the_prompt_it_is_given():
    """Another prompt (the same answers) gives other scores: the cache is each row's own."""
    model, tokenizer = build_tiny(seed=0)
    model.eval()
    prompts, answers = menus(2, tokenizer.vocab_size)
    first = score_menus(model, prompts, answers, tokenizer.pad_token_id)
    swapped = score_menus(model, prompts[::-1], answers, tokenizer.pad_token_id)
    assert not torch.allclose(first, swapped)


@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated")  # peft's call
def test_score_menus_through_a_lora_wrapper():
    peft = pytest.importorskip("peft")
    model, tokenizer = build_tiny(seed=0)
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    wrapped.eval()
    prompts, answers = menus(3, tokenizer.vocab_size)
    expected = rows_scored(wrapped, prompts, answers, tokenizer.pad_token_id, 1.0)
    got = score_menus(wrapped, prompts, answers, tokenizer.pad_token_id)
    assert torch.allclose(got, expected, atol=1e-5)
