"""The update runs only the forward passes its loss reads: one per minibatch for the policy
(the old log-probabilities of one epoch are the sampling ones, never recomputed), and the
KL reference's only when the objective reads it (``kl_coef > 0``)."""

from __future__ import annotations

import random

import pytest
import torch

from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData, TrainSettings
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.models.tiny import build_tiny
from selfplay.core.train.reference import Reference
from selfplay.core.train.update import Updater


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
    objective = PolicyGradient()
    objective.bind(TrainSettings(update_epochs=epochs, kl_coef=kl_coef))
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
