"""Getting the learner ready to train: adapters, device, cold start, optimiser, reference.

    LoRA adapters (optional) -> the device -> the cold start (a fresh run) -> AdamW
    -> Fabric's set-up (strategy, precision) -> the reference policy -> the updater

Generation runs on the plain module and training on Fabric's wrapper of it; both share one
set of weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import lightning as L
import torch

from selfplay.api.objective import Objective
from selfplay.core.config import RunConfig
from selfplay.core.models.lora import apply_lora, use_adapter
from selfplay.core.run.build import train_settings
from selfplay.core.run.hardware import gradient_clipper
from selfplay.core.run.progress import Ticker
from selfplay.core.train.averaging import WeightAverage
from selfplay.core.train.cold_start import warm_up
from selfplay.core.train.reference import Reference
from selfplay.core.train.update import TokenBudget, Updater


@dataclass
class Prepared:
    model: Any  # Fabric's wrapper; ``model.module`` is the plain model
    optimizer: Any
    reference: Reference
    updater: Updater


def prepare_learner(
    fabric: L.Fabric,
    config: RunConfig,
    learner: Any,
    game: Any,
    objective: Objective,
    reference_wanted: bool,
    resuming: bool,
    say: Callable[[str], None],
    console: Any = None,
) -> Prepared:
    """Set the learner up for training (see the module doc); a fresh run cold-starts here."""
    if config.lora.enabled:
        learner.model = apply_lora(learner.model, config.lora, game.roles)
    learner.model = learner.model.to(fabric.device)  # the cold start trains there too
    if not resuming:
        warm_up(learner, game, config, say, lambda label, n: Ticker(label, n, say, console))
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
    objective.bind(train_settings(config, objective))
    if fabric.world_size > 1:
        objective.reduce = _summed(fabric)  # for batch statistics over every process
    updater = Updater(
        model=model,
        optimizer=optimizer,
        objective=objective,
        pad_id=learner.pad_id,
        backward=fabric.backward,
        clip_gradients=gradient_clipper(fabric, config.hardware.strategy),
        max_grad_norm=train.max_grad_norm,
        epochs=train.update_epochs,
        reference=reference,
        temperature=config.generation.temperature,
        role_context=_role_context(config, model),
        micro_batch_size=train.micro_batch_size,
        micro_batch_tokens=_micro_batch_tokens(train.micro_batch_tokens, model.module),
        no_sync=_no_sync(fabric, model),
        processes=fabric.world_size,
        reduce=_summed(fabric),
        average=WeightAverage(model, train.weight_average) if train.weight_average else None,
        measure_mismatch=config.rollout.served,
    )
    learner.role_context = updater.role_context
    return Prepared(model, optimizer, reference, updater)


def _micro_batch_tokens(setting: int | str | None, model: Any) -> TokenBudget | None:
    """``train.micro_batch_tokens``: auto sized from the model (update.TokenBudget)."""
    if setting == "auto":
        return TokenBudget.auto(model)
    return TokenBudget(int(setting)) if setting else None


DROPOUT_SETTINGS = ("attention_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop", "dropout")


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


def _summed(fabric: L.Fabric) -> Callable[[torch.Tensor], torch.Tensor]:
    """A tensor summed over every process (on the device, for NCCL), back on the CPU."""

    def reduce(tensor: torch.Tensor) -> torch.Tensor:
        total = fabric.all_reduce(tensor.float().to(fabric.device), reduce_op="sum")
        return total.cpu().double()

    return reduce


def _role_context(config: RunConfig, model: Any) -> Callable[[str], Any] | None:
    """With one LoRA adapter per role, generation and scoring switch adapters by role."""
    if not (config.lora.enabled and config.lora.per_role):
        return None
    return lambda role: use_adapter(model.module, role)
