"""The learning-rate and KL-coefficient schedules (seed 004's recipe: cosine annealing with a
warm-up; the KL coefficient starting at 0.1 and growing by 0.02 per round against mode
collapse).

Both are functions of the iteration (a round is one iteration) and the config alone, so a
resumed run picks them up exactly where it stopped: the checkpoint holds the iteration and
the optimiser state, the run folder the config. Each iteration's values are logged as
``lr`` and ``kl_coef`` in metrics.csv.

lr at iteration i of T (1-based), warm-up W, floor ``lr_min``:
    i <= W: lr * i / W
    constant, after W: lr
    cosine, after W:   lr_min + (lr - lr_min) * (1 + cos(pi * f)) / 2, f = (i-W-1) / (T-W-1)
(cosine reaches lr_min at the last iteration, T; with ``--resume --iterations`` larger, T is
the new total and the curve stretches from there, which the resume says (`stretched`).
``lr_decay_iterations`` D, when set, stands for T: the cosine reaches lr_min at iteration D and
holds it after, whatever the run's length; a resume may set it to keep the curve it had.)

kl_coef at iteration i: min(max(kl_coef_min, kl_coef + kl_coef_step * (i - 1)), kl_coef_max),
from the objective's own kl_coef (its options) and the train section's step, floor (0) and cap
(a floor is read with a negative step only: a magnet that weakens, then holds).
"""

from __future__ import annotations

import math
from typing import Any


def lr_at(train: Any, iteration: int, total: int) -> float:
    """The learning rate of ``iteration`` (1-based) in a run of ``total`` iterations."""
    base, warm = train.lr, train.lr_warmup
    if warm and iteration <= warm:
        return base * iteration / warm
    if train.lr_schedule == "constant":
        return base
    span = (train.lr_decay_iterations or total) - warm - 1
    if span <= 0:
        return base
    done = min(1.0, max(0.0, (iteration - warm - 1) / span))
    floor = train.lr_min
    return floor + (base - floor) * (1 + math.cos(math.pi * done)) / 2


def stretched(train: Any, done: int, before: int, after: int) -> str:
    """What a resume from iteration ``done`` to a new total does to a cosine that ends with the
    run ("" when nothing changes): the next iteration's rate under the totals ``after`` and
    ``before``, and the setting that keeps the old curve."""
    if train.lr_schedule != "cosine" or train.lr_decay_iterations or before == after:
        return ""
    then, now = lr_at(train, done + 1, before), lr_at(train, done + 1, after)
    if math.isclose(then, now):
        return ""
    return (
        f"the cosine learning rate now ends at iteration {after}, the new total, not at "
        f"{before}: iteration {done + 1} trains at {now:.3g}, where the old curve gave "
        f"{then:.3g}. To keep the old curve (and train.lr_min after it), resume with --set "
        f"train.lr_decay_iterations={before}."
    )


def kl_at(kl_coef: float, train: Any, iteration: int) -> float:
    """The KL coefficient of ``iteration`` (1-based), from the objective's ``kl_coef``."""
    value = max(train.kl_coef_min, kl_coef + train.kl_coef_step * (iteration - 1))
    return value if train.kl_coef_max is None else min(value, train.kl_coef_max)


def scheduled(train: Any) -> bool:
    """Whether anything moves: a constant rate, no warm-up and no KL step change nothing."""
    return train.lr_schedule != "constant" or train.lr_warmup > 0 or train.kl_coef_step != 0


def apply_schedules(
    config: Any, optimizer: Any, objective: Any, iteration: int, kl_coef: float
) -> dict[str, float]:
    """Set this iteration's learning rate and KL coefficient; their values for metrics.csv
    (the KL coefficient only for an objective that reads it). ``kl_coef``: the objective's as
    the run planned it, where the KL schedule starts."""
    train = config.train
    lr, kl = lr_at(train, iteration, config.iterations), kl_at(kl_coef, train, iteration)
    reads_kl = "kl_coef" in objective.reads()
    if scheduled(train):
        for group in optimizer.param_groups:
            group["lr"] = lr
        if reads_kl and objective.options.kl_coef != kl:
            objective.set_kl_coef(kl)
    return {"lr": lr, "kl_coef": kl} if reads_kl else {"lr": lr}
