"""Rows that share a prefix read it once (score_shared, score_menus) and get the values and
gradients of a row per (prompt, answer) (score), on tiny, a random Llama and a random GPT-2."""

from __future__ import annotations

import random

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

from selfplay.core.models import policy_table, prefix_scoring
from selfplay.core.models.policy_table import score_menus
from selfplay.core.models.prefix_scoring import PLANS, can_share, score_shared, shape_of
from selfplay.core.models.scoring import score
from selfplay.core.models.tiny import build_tiny

VOCAB = 100


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
@pytest.mark.parametrize("chunk_positions", [8192, 40])  # one chunk; a chunk of a prompt or two
def test_score_menus_agrees_with_a_row_per_answer(monkeypatch, temperature, chunk_positions):
    monkeypatch.setattr(policy_table, "POSITIONS_PER_CHUNK", chunk_positions)
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


# ---- with gradients: score_shared against score -----------------------------------------------


def batch(kind: str, seed: int = 0):
    """Rows for each plan: ``menus`` (prompts of 6-30 tokens, each with 2-5 answers),
    ``turns`` (distinct prompts after a 40-token preamble) or ``both``; answers of 1-4 tokens,
    so every pass is padded (prompts and preambles end at different places)."""
    rng = random.Random(seed)
    preamble = [1, *(rng.randrange(3, VOCAB) for _ in range(40))] if kind != "menus" else [1]
    prompts, answers = [], []
    for _ in range(5 if kind == "turns" else 4):
        prompt = [*preamble, *(rng.randrange(3, VOCAB) for _ in range(rng.randint(5, 29)))]
        for _ in range(1 if kind == "turns" else rng.randint(2, 5)):
            prompts.append(prompt)
            answers.append([rng.randrange(3, VOCAB) for _ in range(rng.randint(1, 4))])
    return prompts, answers


PLAN_OF = {
    "menus": ("prompts", "rows"),
    "turns": ("preamble", "rows"),
    "both": ("preamble", "prompts", "rows"),
}


def tiny():
    return build_tiny(seed=0)[0]


def llama():
    """A random Llama with grouped-query attention (4 heads, 2 key-value heads)."""
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
    )  # fmt: skip
    torch.manual_seed(1)
    return LlamaForCausalLM(config)


def gpt2():
    """A random GPT-2: learned absolute positions, its own attention and cache code."""
    config = GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=256)
    config.resid_pdrop = config.embd_pdrop = config.attn_pdrop = 0.0
    torch.manual_seed(2)
    return GPT2LMHeadModel(config)


def scored_and_grads(model, scorer, prompts, answers, temperature=0.7, entropy=True):
    """The scores, the loss and every trainable parameter's gradient of a loss that reads
    log-probabilities and entropies of every answer token."""
    model.zero_grad(set_to_none=True)
    out = scorer(model, prompts, answers, 0, temperature, entropy)
    weights = torch.randn(out.logp.shape, generator=torch.Generator().manual_seed(7))
    loss = ((out.logp * weights + 0.1 * out.entropy) * out.mask).sum()
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    return out, loss.detach(), grads


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).detach().norm() / b.detach().norm().clamp(min=1e-12))


def assert_same(model, prompts, answers, **kwargs):
    expected, loss, grads = scored_and_grads(model, score, prompts, answers, **kwargs)
    shared = scored_and_grads(model, score_shared, prompts, answers, **kwargs)
    got, shared_loss, shared_grads = shared
    assert torch.equal(got.mask, expected.mask)
    mask = expected.mask
    assert relative(got.logp * mask, expected.logp * mask) < 1e-5
    assert relative(got.entropy * mask, expected.entropy * mask) < 1e-5
    assert relative(shared_loss, loss) < 1e-5
    assert grads.keys() == shared_grads.keys() and grads
    for name, grad in grads.items():
        assert relative(shared_grads[name], grad) < 1e-5, name


def forward_calls(model) -> list[int]:
    """A list that grows by one per forward pass of ``model`` (the batch size)."""
    calls: list[int] = []
    model.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(kwargs["input_ids"].shape[0]), with_kwargs=True
    )
    return calls


@pytest.mark.parametrize("make", [tiny, llama, gpt2], ids=["tiny", "llama", "gpt2"])
@pytest.mark.parametrize("kind", sorted(PLAN_OF))
def test_shared_passes_give_a_row_eachs_values_and_gradients(make, kind):
    model = make().train()
    prompts, answers = batch(kind)
    assert shape_of(prompts, answers).plan() == PLAN_OF[kind]
    assert can_share(model)
    calls = forward_calls(model)
    assert_same(model, prompts, answers)
    distinct = len({tuple(p) for p in prompts})
    shared_calls = {"menus": [distinct, len(prompts)], "turns": [1, len(prompts)]}
    shared_calls["both"] = [1, distinct, len(prompts)]
    assert calls == [len(prompts), *shared_calls[kind]]  # the row pass, then the shared ones


def test_in_float64_the_passes_agree_to_rounding_of_float64():
    """GPT-2 computes every layer in the model's dtype (Llama's norms run in float32): in
    float64 the shared passes and the row pass agree to 1e-12, gradients included, so the
    1e-6 gaps of float32 are rounding, not a different computation."""
    model = gpt2().double().train()
    for kind in sorted(PLAN_OF):
        prompts, answers = batch(kind, seed=5)
        expected, loss, grads = scored_and_grads(model, score, prompts, answers)
        got, shared_loss, shared_grads = scored_and_grads(model, score_shared, prompts, answers)
        assert expected.logp.dtype == torch.float64
        assert relative(got.logp * got.mask, expected.logp * expected.mask) < 1e-12
        assert relative(shared_loss, loss) < 1e-12
        assert max(relative(shared_grads[n], g) for n, g in grads.items()) < 1e-12


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_temperature_and_no_entropy(temperature):
    prompts, answers = batch("both", seed=3)
    assert_same(tiny().train(), prompts, answers, temperature=temperature, entropy=False)


@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated")  # peft's call
def test_lora_adapters_inside_fabric_get_a_row_eachs_gradients():
    peft = pytest.importorskip("peft")
    import lightning as L

    base = llama()
    wrapped = peft.get_peft_model(base, peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():  # B starts at zero: move it so every adapter matrix has a gradient
        for name, parameter in wrapped.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.1, generator=torch.Generator().manual_seed(5))
    model = L.Fabric(accelerator="cpu", devices=1).setup_module(wrapped)
    model.train()
    assert can_share(model)
    prompts, answers = batch("both", seed=4)
    assert_same(model, prompts, answers)


def test_a_model_that_cannot_share_is_scored_a_row_at_a_time():
    model = tiny()

    class Plain(torch.nn.Module):  # a forward of **kwargs: nothing says it takes a cache
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, **kwargs):
            return self.inner(**kwargs)

    prompts, answers = batch("menus")
    assert not can_share(Plain())
    calls = forward_calls(model)
    score_shared(Plain(), prompts, answers, 0)
    assert calls == [len(prompts)]
    enable = getattr(model, "activation_checkpointing_enable", None)
    (enable or model.gradient_checkpointing_enable)()  # turns the cache off in training
    assert not can_share(model)


def test_a_cache_of_another_kind_falls_back_to_a_row_each(monkeypatch):
    """A model whose cache is not plain full-attention layers (a sliding window, say) is
    found out after the first pass and scored a row at a time."""
    model = tiny().train()
    monkeypatch.setattr(prefix_scoring, "_filled", lambda cache, width: False)
    prompts, answers = batch("menus")
    calls = forward_calls(model)
    assert_same(model, prompts, answers)
    assert calls == [len(prompts), len({tuple(p) for p in prompts}), len(prompts)]


def test_plans_share_only_what_pays():
    prompt, answer = [1, *range(10, 60)], [5, 2]
    assert shape_of([prompt] * 6, [answer] * 6).plan() == ("prompts", "rows")
    assert shape_of([prompt], [answer]).plan() == PLANS[0]  # one row: nothing to share
    rng = random.Random(0)
    # distinct prompts with a short common start (tiny's compact state): a row each
    short = [[1, 2, *(rng.randrange(3, VOCAB) for _ in range(40))] for _ in range(8)]
    assert shape_of(short, [[5, 2]] * 8).plan() == PLANS[0]
    shape = shape_of([[1, 2, 3, 4]] * 3, [[5]] * 3, share=False)
    assert shape.plan() == PLANS[0] and shape.passes() == [(3, 5, 0)]
    # a preamble of 60 tokens, then 10 of each prompt's own and two rows each
    long = [[*range(3, 63), *(rng.randrange(3, VOCAB) for _ in range(10))] for _ in range(4)]
    shape = shape_of([p for p in long for _ in range(2)], [[7, 2]] * 8)
    assert shape.plan() == ("preamble", "prompts", "rows")
    assert shape.passes() == [(1, 60, 0), (4, 9, 60), (8, 3, 69)]


def test_the_shared_backward_gives_the_same_gradients_every_time():
    """Two threads, rows copying one preamble's cache: the copies' gradients are added in a
    fixed order, so the same update gives bitwise the same gradients (a run and its resume
    agree bitwise); indexing's backward added them with atomic adds, in any order."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        model = tiny()
        prompts, answers = batch("both", seed=3)
        prompts, answers = prompts * 8, answers * 8  # copies enough for the threads to share
        first = scored_and_grads(model, score_shared, prompts, answers)[2]
        for _ in range(4):
            again = scored_and_grads(model, score_shared, prompts, answers)[2]
            for name, grad in first.items():
                assert torch.equal(again[name], grad), name
    finally:
        torch.set_num_threads(threads)
