"""LoRA through peft: adapters only train, the reference is the base, roles, state, generation."""

from __future__ import annotations

import random
import warnings

import pytest
import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import GPT2Config, GPT2LMHeadModel

from selfplay.api.policy import Request
from selfplay.api.types import Message
from selfplay.core.models import hf_policy, kv_cache
from selfplay.core.models.hf_policy import HFPolicy
from selfplay.core.models.lora import (
    LoraConfig,
    adapter_state_dict,
    apply_lora,
    is_lora,
    load_adapter_state_dict,
    reference_logits_context,
    resolve_target_modules,
    use_adapter,
)
from selfplay.core.models.tiny import build_tiny
from selfplay.games.tictactoe import TicTacToe

ROLES = ("player_0", "player_1")
IDS = torch.tensor([[1, 40, 41, 42, 43, 44, 45], [1, 50, 51, 52, 53, 54, 55]])
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")


def logits(model) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=IDS).logits


def wrapped(seed: int = 0, model_options: dict | None = None, **options):
    """A tiny model's logits before wrapping, and the model wrapped with LoRA ``options``."""
    model, _ = build_tiny(seed, **(model_options or {}))
    before = logits(model)
    return before, apply_lora(model, LoraConfig(enabled=True, **options), ROLES)


def train_step(model, steps: int = 1) -> None:
    """A few AdamW steps on next-token loss, over the parameters that require gradients."""
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(steps):
        out = model(input_ids=IDS, labels=IDS)
        out.loss.backward()
        optimiser.step()
        optimiser.zero_grad()


def adapter_tensors(model, role: str) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in adapter_state_dict(model).items() if k.startswith(role)}


def test_only_adapters_train_and_a_fresh_adapter_changes_nothing():
    before, model = wrapped()
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    base = model.get_base_model()
    targets = [m for n, m in base.named_modules() if n.endswith(ATTENTION)]
    assert len(targets) == 4 * 4  # four attention projections in each of four layers
    expected = sum(8 * (m.in_features + m.out_features) for m in targets)
    assert sum(p.numel() for p in trainable.values()) == expected
    assert torch.equal(logits(model), before)
    assert is_lora(model) and not is_lora(build_tiny()[0])


def test_the_reference_is_the_base_with_adapters_off():
    before, model = wrapped()
    model.train()
    train_step(model)
    model.eval()
    assert not torch.allclose(logits(model), before)
    with reference_logits_context(model):
        reference = model(input_ids=IDS).logits
    assert not reference.requires_grad
    assert torch.equal(reference, before)
    assert not torch.allclose(logits(model), before)  # adapters are back on afterwards


def test_reference_context_swaps_in_saved_adapters_and_puts_the_current_ones_back():
    _, model = wrapped()
    model.train()
    train_step(model)
    model.eval()
    saved, after_cold_start = adapter_state_dict(model), logits(model)
    model.train()
    train_step(model, steps=2)
    model.eval()
    trained = logits(model)
    assert not torch.allclose(trained, after_cold_start)
    with reference_logits_context(model, saved):
        reference = model(input_ids=IDS).logits
    assert not reference.requires_grad
    assert torch.equal(reference, after_cold_start)
    assert torch.equal(logits(model), trained)


def test_reference_context_needs_lora():
    with pytest.raises(ValueError, match="frozen copy"), reference_logits_context(build_tiny()[0]):
        pass


def test_per_role_adapters_train_separately():
    before, model = wrapped(per_role=True)
    flags = [p.requires_grad for p in model.parameters()]
    idle = adapter_tensors(model, "player_1/")
    start = adapter_tensors(model, "player_0/")
    with use_adapter(model, "player_0"):
        train_step(model)
    assert [p.requires_grad for p in model.parameters()] == flags  # switching freezes nothing
    after = adapter_tensors(model, "player_0/")
    assert any(not torch.equal(after[k], start[k]) for k in start)
    assert all(torch.equal(v, idle[k]) for k, v in adapter_tensors(model, "player_1/").items())
    with use_adapter(model, "player_0"):
        trained = logits(model)
    with use_adapter(model, "player_1"):
        untouched = logits(model)
    assert not torch.allclose(trained, untouched)
    assert torch.equal(untouched, before)
    with pytest.raises(ValueError, match="player_0"), use_adapter(model, "judge"):
        pass


def test_use_adapter_is_a_no_op_without_per_role_adapters():
    before, model = wrapped()
    with use_adapter(model, "player_1"), use_adapter(build_tiny()[0], "player_0"):
        assert torch.equal(logits(model), before)
    with pytest.raises(ValueError, match="roles"):
        apply_lora(build_tiny()[0], LoraConfig(enabled=True, per_role=True))


def test_adapter_state_is_small_exact_and_round_trips():
    _, model = wrapped(per_role=True)
    with use_adapter(model, "player_1"):
        train_step(model, steps=2)
    state = adapter_state_dict(model)
    assert state and all(".lora_" in key for key in state)
    adapter_size = sum(t.numel() for t in state.values())
    full_size = sum(t.numel() for t in model.state_dict().values())
    assert adapter_size < 0.1 * full_size
    with use_adapter(model, "player_1"):
        expected = logits(model)
        train_step(model)  # the saved state is a copy, not a view of live weights
    fresh = apply_lora(build_tiny()[0], LoraConfig(enabled=True, per_role=True), ROLES)
    load_adapter_state_dict(fresh, state)
    with use_adapter(fresh, "player_1"):
        assert torch.equal(logits(fresh), expected)
    single = apply_lora(build_tiny()[0], LoraConfig(enabled=True))
    with pytest.raises(ValueError, match="same LoRA config"):
        load_adapter_state_dict(single, state)


@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated")
def test_save_pretrained_writes_adapters_only(tmp_path):
    _, model = wrapped()
    train_step(model)
    expected = logits(model)
    model.save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".md") == [
        "adapter_config.json",
        "adapter_model.safetensors",
    ]
    saved = load_file(tmp_path / "adapter_model.safetensors")
    assert all(".lora_" in key for key in saved)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert sum(t.numel() for t in saved.values()) == trainable
    reloaded = PeftModel.from_pretrained(build_tiny()[0], tmp_path)
    assert torch.equal(logits(reloaded), expected)


def test_wrapped_model_generates_through_hf_policy(monkeypatch):
    monkeypatch.setattr(hf_policy, "SHARED_PREFIX_MIN_SAVING", 0)  # exercise the cache copy
    plain, tokenizer = build_tiny(seed=3, initializer_range=0.3)
    _, model = wrapped(seed=3, model_options={"initializer_range": 0.3}, per_role=True)
    game = TicTacToe()
    requests = [
        Request(
            game, game.reset(i), "player_0", (Message("user", f"Board {b}."),), random.Random(i)
        )
        for i, b in enumerate(["x1o|345|678", "012|345|678"])
    ]
    options = {"include_system": False, "max_new_tokens": 4}
    policy = HFPolicy(model, tokenizer, **options)
    assert policy._cache_kwarg == kv_cache.cache_kwarg(plain)
    with use_adapter(model, "player_1"):
        got = policy.act(requests, greedy=True)
    want = HFPolicy(plain, tokenizer, **options).act(requests, greedy=True)
    assert [c.token_ids for c in got] == [c.token_ids for c in want]  # fresh adapters: same model
    assert all(len(c.token_ids) >= 1 for c in got)


def test_target_module_errors_name_the_linear_modules():
    model, _ = build_tiny()
    assert resolve_target_modules(model, None) == list(ATTENTION)
    with pytest.raises(ValueError, match=r"\['qkv'\].*'down_proj'.*'q_proj'"):
        resolve_target_modules(model, ["qkv"])
    odd = torch.nn.Sequential()
    odd.add_module("fc1", torch.nn.Linear(4, 4))
    odd.add_module("head", torch.nn.Linear(4, 2))
    with pytest.raises(ValueError, match=r"target_modules.*\['fc1', 'head'\]"):
        resolve_target_modules(odd, None)


def test_gpt2_gets_its_attention_conv1d_layers_without_warnings():
    config = GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64, n_positions=32)
    model = GPT2LMHeadModel(config)
    assert resolve_target_modules(model, None) == ["attn.c_attn", "attn.c_proj"]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*fan_in_fan_out.*")
        lora = apply_lora(model, LoraConfig(enabled=True, rank=2))
    adapted = {n.split(".lora_")[0] for n, p in lora.named_parameters() if p.requires_grad}
    assert sorted(n.split("h.0.")[1] for n in adapted) == ["attn.c_attn", "attn.c_proj"]


def test_the_lora_magnet_moves_its_adapters_part_way_toward_the_policy():
    from selfplay.core.train.update.reference import Reference

    _, model = wrapped()
    reference = Reference(model, model, lora=True, needed=True)
    start = {k: v.clone() for k, v in reference.adapters.items()}
    model.train()
    train_step(model, steps=2)
    now = adapter_state_dict(model)
    moved = [k for k in now if not torch.equal(now[k], start[k])]
    assert moved  # the step changed some adapter matrices
    reference.pull(0.25)
    for key in now:
        assert torch.allclose(reference.adapters[key], start[key] + 0.25 * (now[key] - start[key]))
    assert torch.equal(adapter_state_dict(model)[moved[0]], now[moved[0]])  # policy untouched
    reference.pull(1.0)
    assert all(torch.equal(reference.adapters[k], now[k]) for k in now)
