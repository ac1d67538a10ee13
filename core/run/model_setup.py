"""The learners, built by name and made ready to train: adapters, device, cold start, optimiser,
reference.

    the learners (one shared policy, or one per group of roles: core/train/learners.py)
    -> for each: LoRA adapters (optional) -> the device -> the cold start (a fresh run)
       -> AdamW -> Fabric's set-up (strategy, precision) -> the reference policy -> the updater

Generation runs on the plain module and training on Fabric's wrapper of it; both share one
set of weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lightning as L
import torch

from selfplay.api.game import Game
from selfplay.api.sampler import LEARNER, learner_seat
from selfplay.api.types import Role
from selfplay.core.config import RunConfig
from selfplay.core.config.learners import learner_roles
from selfplay.core.machine.hardware import gradient_clipper
from selfplay.core.machine.processes import Processes
from selfplay.core.models.loading import build_learner
from selfplay.core.models.lora import apply_lora, use_adapter
from selfplay.core.plan.build import build_estimator
from selfplay.core.plan.plan import LearnerPlan, RunPlan
from selfplay.core.run.progress import Ticker
from selfplay.core.train.cold_start import warm_up
from selfplay.core.train.learners import Learner, LearnerParts
from selfplay.core.train.samples import sampling
from selfplay.core.train.search_targets import SearchTargets
from selfplay.core.train.update.averaging import WeightAverage
from selfplay.core.train.update.micro_batches import DROPOUT_SETTINGS, TokenBudget
from selfplay.core.train.update.reference import Reference
from selfplay.core.train.update.updater import Updater


def build_learners(planned: RunPlan, game: Game) -> list[LearnerParts]:
    """The learners' parts, from their plans: the shared policy when no ``learners`` are named."""
    config = planned.config
    if not config.learners:
        return [_built(LEARNER, tuple(game.roles), planned.learner(None), game, "--model")]
    return [
        _built(
            name,
            tuple(learner_roles(name, settings)),
            planned.learner(name),
            game,
            f"learners.{name}.model",
            every=settings.update_every,
        )
        for name, settings in config.learners.items()
    ]


def _built(
    name: str, roles: tuple[Role, ...], planned: LearnerPlan, game: Game, what: str, every: int = 1
) -> LearnerParts:
    config, objective = planned.config, planned.objective
    estimator = build_estimator(config)
    estimator.bind(game.name, game.roles)
    policy = build_learner(config, what)
    policy.name = learner_seat(name)  # what its turns record as their seat
    search = SearchTargets(game, config.train.search_weight, policy)
    return LearnerParts(
        name,
        roles,
        config,
        policy,
        objective,
        estimator,
        search,
        every,
        sampling=sampling(config),
        kl_coef=objective.shared("kl_coef"),
    )


def prepare_learner(
    fabric: L.Fabric,
    processes: Processes,
    trained: LearnerParts,
    game: Any,
    reference_wanted: bool,
    resuming: bool,
    say: Callable[[str], None],
    console: Any = None,
) -> Learner:
    """One learner set up to train (see the module doc); a fresh run cold-starts here (a
    learner of its own on transcripts of its own roles)."""
    config, learner, objective = trained.config, trained.policy, trained.objective
    if config.lora.enabled:
        learner.model = apply_lora(learner.model, config.lora, game.roles)
    learner.model = learner.model.to(fabric.device)  # the cold start trains there too
    if trained.name != LEARNER:  # the banner names each learner's model; here, its size
        say(f"learner {trained.name}: {size(learner.model)}")
    if not resuming:
        shared = trained.name == LEARNER
        told = say if shared else lambda text: say(f"{trained.name}: {text}")
        ticker = lambda label, n: Ticker(label, n, told, console)  # noqa: E731
        warm_up(learner, game, config, told, ticker, roles=None if shared else trained.roles)
    params = [p for p in learner.model.parameters() if p.requires_grad]
    # foreach: each arithmetic step of AdamW is one call over every tensor (PyTorch's default
    # on GPUs only); on the CPU the same arithmetic, bitwise, in about 0.6x the time
    optimizer = torch.optim.AdamW(
        params, lr=config.train.lr, weight_decay=config.train.weight_decay, foreach=True
    )
    if not config.train.dropout:
        without_dropout(learner.model)
    model, optimizer = fabric.setup(learner.model, optimizer)
    learner.model = model.module  # generation runs on the plain module; weights are shared
    if "mixed" in config.hardware.precision and hasattr(learner, "forward_context"):
        learner.forward_context = fabric.autocast  # rollouts in the update's precision too
    reference = Reference(model.module, model, config.lora.enabled, reference_wanted)
    train = config.train
    if fabric.world_size > 1:
        objective.reduce = processes.sum  # for batch statistics over every process
    updater = Updater(
        model=model,
        optimizer=optimizer,
        objective=objective,
        pad_id=learner.pad_id,
        backward=fabric.backward,
        clip_gradients=gradient_clipper(fabric, config.hardware.strategy),
        max_grad_norm=train.max_grad_norm,
        epochs=objective.shared("update_epochs"),
        reference=reference,
        temperature=config.generation.temperature,
        role_context=_role_context(config, model),
        micro_batch_size=train.micro_batch_size,
        micro_batch_tokens=_micro_batch_tokens(train.micro_batch_tokens, model.module),
        no_sync=_no_sync(fabric, model),
        processes=fabric.world_size,
        reduce=processes.sum,
        average=WeightAverage(model, train.weight_average) if train.weight_average else None,
        measure_mismatch=config.rollout.served,
        release=processes.heap.release if config.hardware.malloc_trim else None,
    )
    learner.role_context = updater.role_context
    return Learner.set_up(
        trained, model=model, optimizer=optimizer, reference=reference, updater=updater
    )


def size(model: torch.nn.Module) -> str:
    """``1.23M parameters`` (with LoRA, ``..., 0.05M trained``)."""
    every = sum(p.numel() for p in model.parameters())
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    text = f"{every / 1e6:.2f}M parameters"
    return text if trained == every else f"{text}, {trained / 1e6:.2f}M trained"


def _micro_batch_tokens(setting: int | str | None, model: Any) -> TokenBudget | None:
    """``train.micro_batch_tokens``: auto sized from the model (update.TokenBudget)."""
    if setting == "auto":
        return TokenBudget.auto(model)
    return TokenBudget(int(setting)) if setting else None


def without_dropout(model: Any) -> None:
    """The model's own dropout off (its ``nn.Dropout`` layers, and the rates its config hands
    to attention kernels); LoRA's adapter dropout is left as ``lora.dropout`` sets it."""
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Dropout) and "lora_dropout" not in name:
            module.p = 0.0
    config = getattr(model, "config", None)
    for key in DROPOUT_SETTINGS:
        if isinstance(getattr(config, key, None), float):
            setattr(config, key, 0.0)


def _no_sync(fabric: L.Fabric, model: Any) -> Callable[[bool], Any] | None:
    """Backward passes that skip the gradient all-reduce, where the strategy can (DDP)."""
    if fabric.world_size == 1 or getattr(fabric.strategy, "_backward_sync_control", None) is None:
        return None
    return lambda skip: fabric.no_backward_sync(model, enabled=skip)


def _role_context(config: RunConfig, model: Any) -> Callable[[str], Any] | None:
    """With one LoRA adapter per role, generation and scoring switch adapters by role."""
    if not (config.lora.enabled and config.lora.per_role):
        return None
    return lambda role: use_adapter(model.module, role)
