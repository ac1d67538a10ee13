"""The update runs only the forward passes its loss reads: one per minibatch for the policy
(the old log-probabilities of one epoch are the sampling ones, never recomputed), and the
KL reference's only when the objective reads it (``kl_coef > 0``)."""

from __future__ import annotations

import random

import pytest
import torch

from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.models import scoring
from selfplay.core.models.tiny import build_tiny
from selfplay.core.train.update.reference import Reference
from selfplay.core.train.update.updater import Updater


def samples(n: int) -> list[Sample]:
    rng = random.Random(0)
    out = []
    for _ in range(n):
        prompt = (1, *(rng.randrange(7, 100) for _ in range(rng.randint(3, 9))))
        answer = (rng.randrange(7, 100), 2)
        out.append(Sample("g", "r", prompt, answer, (-1.0, -1.0), rng.uniform(-1, 1), prompt))
    return out


@pytest.mark.parametrize(("kl_coef", "epochs"), [(0.0, 1), (0.1, 1), (0.0, 2)])
def test_forward_passes_per_update(kl_coef, epochs):
    model = build_tiny(seed=0)[0]
    reference = Reference(model, model, lora=False, needed=True)
    calls = {"policy": 0, "reference": 0}
    model.register_forward_hook(lambda *_: calls.__setitem__("policy", calls["policy"] + 1))
    reference.copy.register_forward_hook(
        lambda *_: calls.__setitem__("reference", calls["reference"] + 1)
    )
    objective = PolicyGradient(update_epochs=epochs, kl_coef=kl_coef)
    data = samples(12)
    items = objective.prepare(IterationData(data, [s.reward for s in data]))
    updater = Updater(
        model, torch.optim.AdamW(model.parameters(), lr=1e-3), objective, 0,
        backward=torch.Tensor.backward,
        clip_gradients=lambda m, o, max_norm: torch.nn.utils.clip_grad_norm_(m.parameters(), 1),
        epochs=epochs, reference=reference,
    )  # fmt: skip
    stats = updater.update(items, torch.Generator().manual_seed(0), minibatches=3)
    steps = 3 * epochs
    assert stats.steps == steps
    assert calls == {"policy": steps, "reference": steps if kl_coef else 0}


def test_an_entropy_out_of_the_loss_is_not_differentiated(monkeypatch):
    """entropy_coef 0: the entropy is logged, but the backward pass differentiates logp only."""
    differentiated = []
    grad = torch.autograd.grad

    def counting(outputs, inputs, grads):
        differentiated.append(len(outputs))
        return grad(outputs, inputs, grads)

    monkeypatch.setattr(scoring.torch.autograd, "grad", counting)
    logits = torch.randn(6, 3, 11, generator=torch.Generator().manual_seed(0))
    targets = torch.randint(0, 11, (6, 3), generator=torch.Generator().manual_seed(1))
    grads = {}
    for coef in (0.0, 0.5):
        leaf = logits.clone().requires_grad_()
        logp, entropy = scoring.answer_logprobs(leaf, targets, 1.0, with_entropy=True)
        assert entropy.abs().sum() > 0  # the metric is there either way
        loss = -logp.sum() - coef * entropy.sum() if coef else -logp.sum()
        loss.backward()
        grads[coef] = leaf.grad
    assert differentiated == [1, 2]
    plain = logits.clone().requires_grad_()
    logprobs = torch.log_softmax(plain, -1)
    (-logprobs.gather(-1, targets[..., None]).sum()).backward()
    assert torch.equal(grads[0.0], plain.grad)
    assert not torch.allclose(grads[0.5], plain.grad)


def test_pack_right_pads_rows_and_masks_the_padding():
    ids, attention, starts = scoring.pack([(5, 6), (7,)], [(8,), (9, 10, 11)], pad_id=0)
    assert ids.tolist() == [[5, 6, 8, 0], [7, 9, 10, 11]]
    assert attention.tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert starts.tolist() == [2, 1] and ids.dtype == attention.dtype == torch.long


def test_foreach_adamw_steps_as_the_per_tensor_loop():
    """The update's optimiser runs AdamW with foreach=True because it is the same arithmetic."""
    weights = {}
    for foreach in (False, True):
        model = build_tiny(seed=0)[0]
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=1e-2, weight_decay=0.1, foreach=foreach
        )
        generator = torch.Generator().manual_seed(0)
        for _ in range(3):
            for p in model.parameters():
                p.grad = torch.randn(p.shape, generator=generator)
            optimizer.step()
        weights[foreach] = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert torch.equal(weights[False], weights[True])
    assert not torch.equal(weights[True], torch.cat(
        [p.detach().flatten() for p in build_tiny(seed=0)[0].parameters()]
    ))  # fmt: skip


def test_freed_memory_goes_back_between_backward_passes():
    """``release`` (malloc_trim in a run) runs before the first backward pass of a step of
    several (from it on, large blocks go straight back: the first pass no longer raises the
    peak) and after every pass but the last (the update's end trims that one), never inside a
    pass; a step of one pass never calls it."""
    model = build_tiny(seed=0)[0]
    objective = PolicyGradient(kl_coef=0.0)
    data = samples(12)
    items = objective.prepare(IterationData(data, [s.reward for s in data]))
    events: list[str] = []

    def backward(loss: torch.Tensor) -> None:
        events.append("backward")
        loss.backward()

    updater = Updater(
        model, torch.optim.AdamW(model.parameters(), lr=1e-3), objective, 0, backward=backward,
        clip_gradients=lambda m, o, max_norm: torch.nn.utils.clip_grad_norm_(m.parameters(), 1),
        micro_batch_size=2, release=lambda: events.append("release"),
    )  # fmt: skip
    updater.update(items, torch.Generator().manual_seed(0), minibatches=2)
    assert events == (["release"] + ["backward", "release"] * 2 + ["backward"]) * 2
    events.clear()
    updater.micro_batch_size = None  # the whole minibatch in one pass
    updater.update(items, torch.Generator().manual_seed(0), minibatches=2)
    assert events == ["backward", "backward"]
