"""The character tokenizer and the embedded tiny model: exact, offline, deterministic."""

from __future__ import annotations

import string

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from selfplay.api.types import Message
from selfplay.core.models.builtin import register_models
from selfplay.core.models.tiny import build_tiny, load_tiny_policy, save_tiny
from selfplay.core.models.tokenizer import (
    BOS,
    EOS,
    PAD,
    UNK,
    build_char_tokenizer,
    render_plain_chat,
)


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tokenizer():
    return build_char_tokenizer()


@pytest.mark.parametrize(
    "text", [string.printable, "Board x1o|345|678. You are o. Your move?\n[4]", "", "  a  b\t\n"]
)
def test_ascii_round_trips_exactly(tokenizer, text):
    ids = tokenizer(text).input_ids
    assert ids[0] == tokenizer.bos_token_id
    assert len(ids) == len(text) + 1  # one token per character
    assert tokenizer.decode(ids, skip_special_tokens=True) == text


def test_special_tokens_and_unknown_characters(tokenizer):
    assert (tokenizer.pad_token, tokenizer.bos_token, tokenizer.eos_token) == (PAD, BOS, EOS)
    assert [tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id] == [0, 1, 2]
    ids = tokenizer("héllo", add_special_tokens=False).input_ids
    assert ids[1] == tokenizer.unk_token_id
    assert tokenizer.decode(ids) == f"h{UNK}llo"
    assert tokenizer.padding_side == "left"


def test_plain_chat_format_uses_single_token_role_tags(tokenizer):
    messages = [Message("system", "rules"), Message("user", "Board 012")]
    text = render_plain_chat(messages)
    assert text == "<|system|>rules\n<|user|>Board 012\n<|assistant|>"
    ids = tokenizer(text).input_ids
    assert len(ids) == 1 + 1 + len("rules\n") + 1 + len("Board 012\n") + 1
    assert tokenizer.decode(ids, skip_special_tokens=True) == "rules\nBoard 012\n"


def test_tokenizer_saves_and_reloads_offline(tokenizer, tmp_path):
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    text = render_plain_chat([Message("user", "Board x1o|345|678.")])
    assert reloaded(text).input_ids == tokenizer(text).input_ids
    assert reloaded.decode(tokenizer(text).input_ids) == tokenizer.decode(tokenizer(text).input_ids)
    assert reloaded.padding_side == "left"


def test_build_tiny_is_deterministic_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    first, _ = build_tiny(seed=0)
    assert torch.equal(torch.rand(3), expected)
    second, _ = build_tiny(seed=0)
    other, _ = build_tiny(seed=1)
    pairs = list(zip(first.parameters(), second.parameters(), strict=True))
    assert all(torch.equal(a, b) for a, b in pairs)
    assert not torch.equal(first.model.embed_tokens.weight, other.model.embed_tokens.weight)


def test_tiny_size_and_config():
    model, tokenizer = build_tiny()
    count = sum(p.numel() for p in model.parameters())
    assert 500_000 <= count <= 1_000_000
    assert model.config.vocab_size == len(tokenizer)
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id


def test_saved_tiny_reloads_offline_with_equal_logits(tmp_path):
    save_tiny(tmp_path, seed=0)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    original, _ = build_tiny(seed=0)
    ids = torch.tensor([tokenizer("Board 012|345|678. You are x.").input_ids])
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, original(ids).logits, atol=1e-6)
    policy = load_tiny_policy(path=tmp_path)
    assert policy.name == "tiny" and policy.max_new_tokens == 8 and not policy.include_system


def test_tiny_is_registered_through_the_model_hook():
    registered = {}
    register_models(lambda name, loader: registered.__setitem__(name, loader))
    policy = registered["tiny"](max_new_tokens=4)
    assert policy.name == "tiny" and policy.max_new_tokens == 4
