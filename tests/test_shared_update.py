"""The update reads each shared prompt once (score_shared) and takes the steps a row per
sample would: the same losses, metrics (the served-rollout mismatch too) and every
parameter's gradients, to 1e-5 relative."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData
from selfplay.core.algorithms.legal_pg import LegalPolicyGradient
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.config import LoraConfig
from selfplay.core.models import prefix_scoring
from selfplay.core.models.lora import apply_lora, use_adapter
from selfplay.core.models.tiny import build_tiny
from selfplay.core.train.update.micro_batches import TokenBudget, pack_by_tokens
from selfplay.core.train.update.reference import Reference
from selfplay.core.train.update.updater import Updater

ANSWERS = {"[a]": (50, 2), "[bb]": (51, 52, 2), "[c]": (53, 2), "[dd]": (54, 55, 56, 2)}


def with_options(objective, **settings):
    """``objective`` rebuilt with the shared ``settings`` its options declare (as a plan would)."""
    fields = type(objective).Options.model_fields
    changed = {key: value for key, value in settings.items() if key in fields}
    return type(objective)(**{**objective.options.model_dump(), **changed})


def legal_choices(n: int, roles=("r",)) -> IterationData:
    """Moves chosen among legal answers after prompts that open with a 30-token preamble."""
    rng = random.Random(1)
    preamble = (1, *(rng.randrange(7, 100) for _ in range(30)))
    samples = []
    for k in range(n):
        prompt = (*preamble, *(rng.randrange(7, 100) for _ in range(rng.randint(5, 20))))
        menu = tuple(sorted(rng.sample(sorted(ANSWERS), rng.randint(2, 4))))
        text = rng.choice(menu)
        samples.append(
            Sample("g", roles[k % len(roles)], prompt, ANSWERS[text], (-1.0,) * len(ANSWERS[text]),
                   rng.uniform(-1, 1), prompt, menu=menu)
        )  # fmt: skip
    return IterationData(samples, encode=ANSWERS.__getitem__)


def groups(n: int) -> IterationData:
    """GRPO-like: four completions of each prompt, with their sampled log-probabilities."""
    rng = random.Random(2)
    samples = []
    for _ in range(n):
        prompt = (1, *(rng.randrange(7, 100) for _ in range(rng.randint(20, 40))))
        for _ in range(4):
            answer = (*(rng.randrange(7, 100) for _ in range(rng.randint(0, 5))), 2)
            logprobs = tuple(-rng.random() * 3 for _ in answer)
            samples.append(Sample("g", "r", prompt, answer, logprobs, rng.uniform(-1, 1), prompt))
    return IterationData(samples)


def gpt2():
    config = GPT2Config(vocab_size=107, n_embd=32, n_layer=2, n_head=4, n_positions=256)
    config.resid_pdrop = config.embd_pdrop = config.attn_pdrop = 0.0
    torch.manual_seed(2)
    return GPT2LMHeadModel(config)


def run_update(objective, data, share, *, make=None, epochs=1, minibatches=1, tokens=None,
               lora_roles=(), lora=False):  # fmt: skip
    """(each optimiser step's gradients by name, the update's metrics). Plain SGD: Adam's
    first step is about lr * sign(gradient), which turns rounding in a near-zero gradient
    into a difference of a whole step, so its later steps could not be compared."""
    model = make() if make else build_tiny(seed=0)[0]
    role_context = None
    if lora_roles:
        torch.manual_seed(3)
        model = apply_lora(model, LoraConfig(enabled=True, rank=4, per_role=True), lora_roles)
        role_context = lambda role: use_adapter(model, role)  # noqa: E731
    reference = Reference(model, model, lora=bool(lora_roles) or lora, needed=True)
    with torch.no_grad():  # a policy away from its reference (LoRA's B away from zero)
        for p in model.parameters():
            if p.requires_grad:
                noise = torch.Generator().manual_seed(p.numel())
                p.add_(0.05 * torch.randn(p.shape, generator=noise))
    grads: list[dict[str, torch.Tensor]] = []

    def clip(module, optimizer, max_norm):
        named = module.named_parameters()
        grads.append({n: p.grad.clone() for n, p in named if p.grad is not None})
        return torch.nn.utils.clip_grad_norm_(module.parameters(), max_norm)

    objective = with_options(objective, update_epochs=epochs, kl_coef=0.1, entropy_coef=0.01)
    advantages = [s.reward for s in data.samples]
    items = objective.prepare(IterationData(data.samples, advantages, encode=data.encode))
    trainable = [p for p in model.parameters() if p.requires_grad]
    updater = Updater(
        model, torch.optim.SGD(trainable, lr=1e-2), objective, 0,
        backward=torch.Tensor.backward, clip_gradients=clip, epochs=epochs,
        reference=reference, micro_batch_tokens=tokens, role_context=role_context,
        share_prefixes=share, measure_mismatch=True,
    )  # fmt: skip
    stats = updater.update(items, torch.Generator().manual_seed(3), minibatches)
    return grads, stats.means()


def gradient_gaps(mine: dict, theirs: dict) -> dict[str, float]:
    """Each parameter's gradient difference relative to its norm, floored at a hundredth of
    the largest. A gradient hundreds of times smaller than the rest (the last layer's queries
    and keys under per-role adapters: 2e-3 beside 0.56) is a sum of terms that mostly cancel,
    and two summation orders leave it 1.1e-5 apart in fp32, 2e-8 in absolute terms; in
    float64 the two paths agree to 1e-15 (test_prefix_scoring.py), so this is rounding."""
    floor = 1e-2 * max(float(g.norm()) for g in theirs.values())
    return {n: float((mine[n] - g).norm()) / max(float(g.norm()), floor) for n, g in theirs.items()}


@pytest.fixture
def shared_passes(monkeypatch) -> list[int]:
    """The rows of each shared scoring (policy or reference) the update runs."""
    calls: list[int] = []
    run = prefix_scoring._score_passes

    def counted(*args, **kwargs):
        calls.append(len(args[3]))  # its rows' answers
        return run(*args, **kwargs)

    monkeypatch.setattr(prefix_scoring, "_score_passes", counted)
    return calls


def assert_same_steps(objective, data, calls, **kwargs):
    rows, row_metrics = run_update(objective(), data, False, **kwargs)
    assert not calls
    shared, metrics = run_update(objective(), data, True, **kwargs)
    assert calls  # the shared passes ran
    assert len(shared) == len(rows) > 0
    for step, (mine, theirs) in enumerate(zip(shared, rows, strict=True)):
        assert mine.keys() == theirs.keys()
        gaps = gradient_gaps(mine, theirs)
        assert max(gaps.values()) < 1e-5, (step, max(gaps.items(), key=lambda kv: kv[1]))
    assert "rollout/mismatch_kl" in row_metrics
    if kwargs.get("tokens"):  # measured on the first micro-batch, which holds more items shared
        row_metrics = {k: v for k, v in row_metrics.items() if "mismatch" not in k}
    for key, value in row_metrics.items():
        assert metrics[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key  # as micro-batches
    return metrics


@pytest.mark.parametrize("tokens", [None, 400], ids=["whole", "micro-batches"])
@pytest.mark.parametrize("make", [None, gpt2], ids=["tiny", "gpt2"])
def test_legal_pg_steps_are_a_row_eachs(make, tokens, shared_passes):
    budget = TokenBudget(tokens) if tokens else None
    data = legal_choices(12)
    metrics = assert_same_steps(LegalPolicyGradient, data, shared_passes, make=make, tokens=budget)
    rows = sum(len(s.menu) for s in data.samples)
    assert sum(shared_passes) == 2 * rows  # the policy's and the reference's
    assert metrics["kl"] > 0 and metrics["entropy"] > 0


def test_grpo_groups_over_two_epochs_are_a_row_eachs(shared_passes):
    assert_same_steps(PolicyGradient, groups(4), shared_passes, epochs=2, minibatches=2)


@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated")  # peft's call
def test_per_role_adapters_take_a_row_eachs_steps(shared_passes):
    data = legal_choices(10, roles=("a", "b"))
    assert_same_steps(LegalPolicyGradient, data, shared_passes, lora_roles=("a", "b"))


def test_a_shared_prompt_counts_once_in_the_token_budget():
    def menu(last: int):
        prompt = (*range(1, 100), 100 + last)
        rows = tuple(SimpleNamespace(prompt_ids=prompt, token_ids=(5, 6, 2)) for _ in range(9))
        return SimpleNamespace(samples=rows)

    budget = TokenBudget(400)
    one = [menu(0), menu(0)]  # the same prompt: 99 tokens once, 18 rows of 4 and their caches
    assert budget.cost([(1, 99, 0), (18, 4, 99)]) == 99 + 18 * (4 + 99 / 12) <= 400
    assert pack_by_tokens(one, budget, shared=True) == [one]
    assert pack_by_tokens(one, budget) == [[i] for i in one]  # a row each: 9 x 103 tokens
    # ten prompts after one preamble: a menu alone is 927 tokens as rows, over the budget, so
    # a micro-batch of shared passes may grow to that: a preamble of 98 tokens once, then
    # each prompt's own token and its nine rows, each with its copy of the cache
    menus = [menu(k) for k in range(10)]
    six = [(1, 98, 0), (6, 1, 98), (54, 4, 99)]  # 98 + 6 x (1 + 98/12) + 54 x (4 + 99/12)
    assert budget.cost(six) <= 927 < budget.cost([(1, 98, 0), (7, 1, 98), (63, 4, 99)])
    assert [len(b) for b in pack_by_tokens(menus, budget, shared=True)] == [6, 4]
    assert budget.fits(1, 400) and not budget.fits(2, 201)  # a row each, as before
