"""The update's memory bounds keep its numbers: answer-only logits, chunked log-softmax,
micro-batches with gradient accumulation (train.micro_batch_size)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData
from selfplay.core.algorithms.dpo import DPO
from selfplay.core.algorithms.legal_pg import LegalPolicyGradient
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.algorithms.sft import SFT
from selfplay.core.models import scoring
from selfplay.core.models.tiny import build_tiny
from selfplay.core.plan.config_loader import build_config
from selfplay.core.train.update.micro_batches import (
    AUTO_BYTES,
    BYTES_PER_LOGIT,
    TokenBudget,
    pack_by_tokens,
)
from selfplay.core.train.update.reference import Reference
from selfplay.core.train.update.updater import Updater


def with_options(objective, **settings):
    """``objective`` rebuilt with the shared ``settings`` its options declare (as a plan would)."""
    fields = type(objective).Options.model_fields
    changed = {key: value for key, value in settings.items() if key in fields}
    return type(objective)(**{**objective.options.model_dump(), **changed})


def samples(n: int, seed: int = 0) -> list[Sample]:
    """Samples of uneven prompt and answer lengths, two per prompt (for DPO's pairs)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 2 == 0:
            prompt = (1, *(rng.randrange(7, 100) for _ in range(rng.randint(5, 30))))
        answer = (*(rng.randrange(7, 100) for _ in range(rng.randint(0, 6))), 2)
        logprobs = tuple(-rng.random() * 3 for _ in answer)
        out.append(Sample("g", "r", prompt, answer, logprobs, rng.uniform(-1, 1), prompt))
    return out


def run_update(
    objective, micro: int | None, epochs: int = 2, minibatches: int = 2, tokens=None, data=None
):
    """(gradients of each optimiser step, the update's metrics) on a fresh tiny model."""
    model = build_tiny(seed=0)[0]
    reference = Reference(model, model, lora=False, needed=True)
    with torch.no_grad():  # a reference that differs from the policy, so the KL is not 0
        for p in model.parameters():
            p.add_(0.01 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    grads: list[list[torch.Tensor]] = []

    def clip(module, optimizer, max_norm):
        grads.append([p.grad.clone() for p in module.parameters()])
        return torch.nn.utils.clip_grad_norm_(module.parameters(), max_norm)

    objective = with_options(objective, update_epochs=epochs, kl_coef=0.1, entropy_coef=0.01)
    data = data or IterationData(samples(14))
    advantages = [s.reward for s in data.samples] if objective.needs == "advantages" else None
    items = objective.prepare(replace(data, advantages=advantages))
    updater = Updater(
        model, torch.optim.AdamW(model.parameters(), lr=1e-3), objective, 0,
        backward=torch.Tensor.backward, clip_gradients=clip, epochs=epochs,
        reference=reference, micro_batch_size=micro, micro_batch_tokens=tokens,
    )  # fmt: skip
    stats = updater.update(items, torch.Generator().manual_seed(3), minibatches)
    return grads, stats.means()


@pytest.mark.parametrize(
    ("make", "micros"),
    [(PolicyGradient, (1, 3)), (DPO, (2,)), (SFT, (3,))],
    ids=["pg", "dpo", "sft"],
)
def test_micro_batches_give_the_whole_minibatch_gradients_and_metrics(make, micros):
    whole_grads, whole = run_update(make(), micro=None)
    assert whole["update_steps"] == 4
    for micro in micros:
        grads, metrics = run_update(make(), micro=micro)
        assert len(grads) == len(whole_grads)
        for step, (mine, theirs) in enumerate(zip(grads, whole_grads, strict=True)):
            for a, b in zip(mine, theirs, strict=True):
                assert torch.allclose(a, b, rtol=0, atol=1e-6), (micro, step)
        assert metrics.keys() == whole.keys()
        for key, value in whole.items():
            assert metrics[key] == pytest.approx(value, rel=1e-5, abs=1e-6), (micro, key)


def legal_choices(n: int) -> IterationData:
    """Learner moves chosen among legal answers (legal-pg's menus of three)."""
    answers = {"[a]": (50, 2), "[bb]": (51, 52, 2), "[c]": (53, 2)}
    rng = random.Random(1)
    chosen = []
    for _ in range(n):
        prompt = (1, *(rng.randrange(7, 100) for _ in range(rng.randint(5, 30))))
        text = rng.choice(sorted(answers))
        chosen.append(
            Sample("g", "r", prompt, answers[text], (-1.0,) * len(answers[text]),
                   rng.uniform(-1, 1), prompt, menu=tuple(sorted(answers)))
        )  # fmt: skip
    return IterationData(chosen, encode=answers.__getitem__)


@pytest.mark.parametrize(
    ("make", "budgets", "epochs"),
    [
        (PolicyGradient, (40, 120), 2),
        (DPO, (70,), 2),
        (SFT, (90,), 2),
        (LegalPolicyGradient, (100, 300), 1),
    ],
    ids=["pg", "dpo", "sft", "legal-pg"],
)
def test_token_budgets_give_the_whole_minibatch_gradients(make, budgets, epochs):
    """Every optimiser step's gradients match; legal-pg takes one step (one epoch, one
    minibatch), so Adam's later steps cannot amplify rounding in its near-zero gradients."""
    data = legal_choices(10) if make is LegalPolicyGradient else None
    steps = 1 if make is LegalPolicyGradient else 2
    whole_grads, whole = run_update(make(), None, epochs, steps, data=data)
    for tokens in budgets:
        budget = TokenBudget(tokens)
        grads, metrics = run_update(make(), None, epochs, steps, tokens=budget, data=data)
        assert len(grads) == len(whole_grads)
        for step, (mine, theirs) in enumerate(zip(grads, whole_grads, strict=True)):
            for a, b in zip(mine, theirs, strict=True):
                assert torch.allclose(a, b, rtol=0, atol=1e-5), (tokens, step)
        for key, value in whole.items():
            assert metrics[key] == pytest.approx(value, rel=1e-5, abs=1e-6), (tokens, key)


def test_items_are_packed_in_order_within_the_token_budget():
    from types import SimpleNamespace

    def item(prompt: int, answer: int, rows: int = 1):
        sample = SimpleNamespace(prompt_ids=(0,) * prompt, token_ids=(0,) * answer)
        return SimpleNamespace(samples=(sample,) * rows)

    items = [item(8, 2), item(8, 2), item(18, 2), item(4, 1, rows=2), item(50, 50)]
    packed = pack_by_tokens(items, TokenBudget(40))
    assert packed == [items[:2], [items[2]], [items[3]], [items[4]]]  # 2x10, 1x20, 2x5, 1x100
    every = TokenBudget.auto(build_tiny(seed=0)[0])
    assert pack_by_tokens(items, every) == [items]  # the tiny model: all in one
    assert every.fits(64, 60) and not every.fits(64, 200)  # the default run: one, mostly
    wide = TokenBudget.auto(SimpleNamespace(config=SimpleNamespace(n_embd=64, n_layer=2, n_head=2)))
    assert wide.fits(16, 577) and not wide.fits(32, 577)  # the wide run: ~18 rows


def test_the_automatic_budget_counts_the_answers_logits():
    """Rows that read a shared prompt from a cache cost little, and their answers' logits do
    not: 192 rows of 8 answer tokens after six prompts (the 50k-vocabulary toy's Kuhn poker
    minibatch of 256) held 0.6 GB of logits and their gradients in one micro-batch that the
    budget, counting activations alone, put at 0.2 GB."""
    from types import SimpleNamespace

    config = SimpleNamespace(n_embd=64, n_layer=2, n_head=2, vocab_size=50_000)
    wide = TokenBudget.auto(SimpleNamespace(config=config))
    assert wide.vocab == 50_000 and TokenBudget.auto(build_tiny(seed=0)[0]).vocab == 107
    rng = random.Random(0)
    rules = tuple(rng.randrange(3, 100) for _ in range(420))
    prompts = [(*rules, *(rng.randrange(3, 100) for _ in range(140 + k))) for k in range(6)]
    rows = [
        SimpleNamespace(
            prompt_ids=prompts[k % 6], token_ids=tuple(rng.randrange(3, 100) for _ in range(8))
        )
        for k in range(192)
    ]
    items = [SimpleNamespace(samples=(row,)) for row in rows]
    logits = 8 * 50_000 * BYTES_PER_LOGIT  # a row's, with their gradient
    packed = pack_by_tokens(items, wide, shared=True, once=True)
    assert len(packed) == 3 and max(len(micro) for micro in packed) * logits <= AUTO_BYTES
    without = replace(wide, vocab=0)  # the activations alone: one micro-batch of 614 MB logits
    assert pack_by_tokens(items, without, shared=True, once=True) == [items]
    assert wide.fits(17, 577) and not wide.fits(17, 577, answer=8)  # a row's 3.2 MB more
    assert TokenBudget(400).cost([(2, 100, 0)], answers=16) == 200  # tokens: no logits


def test_the_output_layer_sees_only_answer_positions():
    model = build_tiny(seed=0)[0]
    seen: list[tuple[int, ...]] = []
    model.lm_head.register_forward_hook(lambda m, args, out: seen.append(tuple(args[0].shape)))
    prompts, actions = [(1, *range(10, 40)), (1, 43)], [(50, 51, 2), (52,)]
    scored = scoring.score(model, prompts, actions, pad_id=0)
    assert seen == [(2, 3, model.config.hidden_size)]  # not 2 x 34 positions
    assert scored.logp.shape == (2, 3)


def test_chunked_log_softmax_equals_one_chunk(monkeypatch):
    prompts = [s.prompt_ids for s in samples(8)]
    actions = [s.token_ids for s in samples(8)]

    def scored_and_grads():
        model = build_tiny(seed=0)[0]
        out = scoring.score(model, prompts, actions, pad_id=0)
        ((out.logp + out.entropy) * out.mask).sum().backward()
        return out, [p.grad for p in model.parameters()]

    whole, whole_grads = scored_and_grads()
    monkeypatch.setattr(scoring, "CHUNK_ELEMENTS", 3 * 107)  # three rows of the tiny vocabulary
    chunked, grads = scored_and_grads()
    # the same rows through matmuls of other shapes: equal up to rounding (about 5e-7 apart
    # at one thread), not bit for bit
    assert torch.allclose(whole.logp, chunked.logp, rtol=0, atol=1e-5)
    assert torch.allclose(whole.entropy, chunked.entropy, rtol=0, atol=1e-5)
    for a, b in zip(grads, whole_grads, strict=True):
        assert torch.allclose(a, b, rtol=0, atol=1e-6)


def test_the_backward_pass_writes_the_logits_gradient_over_given_logits(monkeypatch):
    """`score` gives its logits up: their gradient is written where they were, chunk by chunk,
    so a pass never holds the two side by side; logits not given are left as they were."""
    monkeypatch.setattr(scoring, "CHUNK_ELEMENTS", 2 * 11)  # chunks of two rows
    logits = torch.randn(5, 3, 11, generator=torch.Generator().manual_seed(0))
    targets = torch.randint(0, 11, (5, 3), generator=torch.Generator().manual_seed(1))
    grads = {}
    for given in (False, True):
        leaf = logits.clone().requires_grad_()
        made = leaf * 1.0  # an intermediate, as a model's output is
        seen: list[torch.Tensor] = []
        made.register_hook(seen.append)
        logp, entropy = scoring.answer_logprobs(made, targets, 0.7, True, given=given)
        (logp.sum() + 0.1 * entropy.sum()).backward()
        grads[given] = leaf.grad
        assert (seen[0].data_ptr() == made.data_ptr()) is given
        assert torch.equal(made.detach(), seen[0] if given else logits)
    assert torch.equal(grads[True], grads[False])  # the same values, bit for bit


def test_a_model_without_an_output_layer_is_scored_from_its_full_logits():
    model = build_tiny(seed=0)[0]

    class Plain(torch.nn.Module):  # no get_output_embeddings
        def __init__(self):
            super().__init__()
            self.inner = model

        def forward(self, **kwargs):
            return self.inner(**kwargs)

    prompts, actions = [(1, 40, 41), (1, 43)], [(50, 2), (52,)]
    expected = scoring.score(model, prompts, actions, pad_id=0)
    plain = scoring.score(Plain(), prompts, actions, pad_id=0)
    assert scoring.output_layer(Plain()) is None
    # the full logits and the cut ones go through matmuls of different shapes: at one thread
    # they differ by about 5e-7, so equal up to rounding, not bit for bit
    assert torch.allclose(plain.logp, expected.logp, rtol=0, atol=1e-5)


def test_micro_batch_size_must_be_positive():
    assert build_config(overrides=["train.micro_batch_size=4"]).train.micro_batch_size == 4
    assert build_config().train.micro_batch_size is None
    with pytest.raises(ConfigError, match="micro_batch_size"):
        build_config(overrides=["train.micro_batch_size=0"])
