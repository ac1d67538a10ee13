"""LoRA adapters through peft: the learner trains small adapters on a frozen base model.

Why: self-play keeps a learner, a KL reference and a pool of past opponents. With full
fine-tuning each of those is a copy of the model; with LoRA the base is stored once and
everything else is a few adapter tensors:

- The learner is ``base + adapter``; only adapter parameters require gradients, so the
  optimiser holds state for them alone.
- The KL reference is the policy as the cold start left it, without a second copy of the
  weights: `reference_logits_context` swaps in the adapter tensors saved after the cold start
  (a few tensors), or switches the adapters off when there are none (the base). A fresh
  adapter leaves the logits unchanged (LoRA's B matrix starts at zero), so at step 0 the
  policy equals its reference exactly either way.
- ``per_role=True`` gives every role its own adapter on the one base (the adapter name is
  the role); `use_adapter` switches between them. Otherwise one adapter, ``"default"``,
  plays every role and `use_adapter` does nothing, so the loop may call it either way.
- A pool snapshot or a checkpoint is `adapter_state_dict` (all adapters, cloned, base
  weights never included); `load_adapter_state_dict` puts it back into a model wrapped by
  `apply_lora` with the same config and roles.

Checkpoints of a LoRA run therefore hold adapters only. The base is rebuilt from the run's
resolved config (the ``tiny`` model from its seed, a Hugging Face model from its folder),
wrapped again with `apply_lora`, and the adapter state is loaded on top; the base must be
the same weights it was trained on. ``model.save_pretrained(folder)`` on the wrapped model
likewise writes only ``adapter_config.json`` and ``adapter_model.safetensors``: the
``"default"`` adapter in ``folder``, a per-role adapter in ``folder/<role>``;
``peft.PeftModel.from_pretrained(base, folder)`` reloads the default one (``load_adapter``
adds the others). To ship a plain model, merge:
``model.merge_and_unload()``.

Default target modules: the attention projections, found by name (``q_proj/k_proj/v_proj/
o_proj`` for Llama, Mistral, Qwen and kin; ``attn.c_attn/attn.c_proj`` for GPT-2; fused
``qkv_proj`` or ``query_key_value`` elsewhere). Name them in ``target_modules`` for any other
architecture; an error lists the model's Linear module names.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import peft
import torch
from peft import PeftModel, get_peft_model_state_dict, set_peft_model_state_dict
from peft.tuners.tuners_utils import BaseTunerLayer
from transformers.pytorch_utils import Conv1D

from selfplay.core.config import LoraConfig

DEFAULT_ADAPTER = "default"
# Keys of `adapter_state_dict` are ``"<adapter>/<peft key>"``.
KEY_SEPARATOR = "/"
# Attention projections per architecture family, matched as suffixes of module names; the
# family matching the most names wins (Phi-3 has ``o_proj`` too, but ``qkv_proj`` with it).
DEFAULT_TARGETS: tuple[tuple[str, ...], ...] = (
    ("q_proj", "k_proj", "v_proj", "o_proj"),  # Llama, Mistral, Qwen, Gemma, OPT
    ("attn.c_attn", "attn.c_proj"),  # GPT-2 (Conv1D layers)
    ("qkv_proj", "o_proj"),  # Phi-3
    ("query_key_value",),  # GPT-NeoX, Falcon, Bloom
)


def apply_lora(model: Any, config: LoraConfig, roles: Sequence[str] = ()) -> PeftModel:
    """Wrap ``model`` with fresh adapters: ``"default"``, or one per role when ``per_role``.

    The base model is changed in place (peft injects the adapter layers into it) and frozen;
    every adapter's parameters require gradients. ``config.enabled`` is the caller's switch:
    this function always wraps. Adapter A matrices draw from torch's global RNG.
    """
    if is_lora(model):
        raise ValueError("The model already has LoRA adapters; apply_lora wraps a plain model.")
    names = _adapter_names(config, roles)
    targets = resolve_target_modules(model, config.target_modules)
    with warnings.catch_warnings():
        # peft 0.21 calls a method transformers 5 deprecated; nothing for our users to act on.
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated")
        wrapped = peft.get_peft_model(model, _peft_config(model, config, targets), names[0])
    for name in names[1:]:
        wrapped.add_adapter(name, _peft_config(model, config, targets))
    for parameter in _adapter_parameters(wrapped):
        parameter.requires_grad_(True)
    return wrapped


def is_lora(model: Any) -> bool:
    """Whether ``model`` (possibly inside a Fabric/DDP wrapper) carries peft adapters."""
    return _find_peft(model) is not None


@contextmanager
def use_adapter(model: Any, role: str | None) -> Iterator[None]:
    """Run the block with ``role``'s adapter active, then restore the previous one.

    A no-op for a model without per-role adapters and for ``role=None``. Only which adapter
    takes part in the forward pass changes; which parameters require gradients does not
    (peft's ``set_adapter`` would also freeze the other adapters, which would hide them
    from an optimiser built later).
    """
    peft_model = _find_peft(model)
    if peft_model is None or role is None or _adapters(peft_model) == [DEFAULT_ADAPTER]:
        yield
        return
    if role not in peft_model.peft_config:
        raise ValueError(
            f"No LoRA adapter for role {role!r}; the model has adapters {_adapters(peft_model)}."
        )
    previous = peft_model.active_adapter
    _activate(peft_model, role)
    try:
        yield
    finally:
        _activate(peft_model, previous)


@contextmanager
def reference_logits_context(
    model: Any, adapters: dict[str, torch.Tensor] | None = None
) -> Iterator[None]:
    """Run the block as the reference policy, without gradients.

    With ``adapters`` (an `adapter_state_dict`, e.g. taken after the cold start) those adapter
    weights are swapped in for the block and the current ones put back after it; without, the
    block runs on the base with every adapter off. Either way no second copy of the base
    weights exists. The swap writes the adapter parameters in place, so score the reference
    before a forward pass whose graph is still to be back-propagated.
    """
    peft_model = _require_peft(model, "reference_logits_context")
    if adapters is None:
        with peft_model.disable_adapter(), torch.no_grad():
            yield
        return
    current = adapter_state_dict(peft_model)
    with torch.no_grad():
        load_adapter_state_dict(peft_model, adapters)
        try:
            yield
        finally:
            load_adapter_state_dict(peft_model, current)


def adapter_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """Every adapter's tensors, cloned, keyed ``"<adapter>/<peft key>"``; no base weights.

    Cloned so that a pool snapshot stays fixed while the learner keeps training.
    """
    peft_model = _require_peft(model, "adapter_state_dict")
    state: dict[str, torch.Tensor] = {}
    for name in _adapters(peft_model):
        for key, tensor in _peft_state(peft_model, name).items():
            state[f"{name}{KEY_SEPARATOR}{key}"] = tensor.detach().clone()
    return state


def load_adapter_state_dict(model: Any, state: dict[str, torch.Tensor]) -> None:
    """Copy `adapter_state_dict` output into a model wrapped with the same config and roles."""
    peft_model = _require_peft(model, "load_adapter_state_dict")
    groups: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in state.items():
        name, separator, inner = key.partition(KEY_SEPARATOR)
        if not separator:
            raise ValueError(f"Adapter state key {key!r} lacks the '<adapter>/' prefix.")
        groups.setdefault(name, {})[inner] = tensor
    if sorted(groups) != _adapters(peft_model):
        raise ValueError(
            f"The adapter state holds adapters {sorted(groups)} but the model has "
            f"{_adapters(peft_model)}; wrap the model with the same LoRA config and roles."
        )
    for name, part in groups.items():
        expected = set(_peft_state(peft_model, name))
        if set(part) != expected:
            odd = sorted(set(part) ^ expected)[:3]
            raise ValueError(
                f"The adapter state for {name!r} does not fit the model (e.g. {odd}); "
                "was it saved with a different rank or target_modules?"
            )
        set_peft_model_state_dict(peft_model, part, adapter_name=name)


def save_adapter_folder(model: Any, state: dict[str, torch.Tensor], folder: Any) -> None:
    """Write the ``"default"`` adapter of ``state`` as a PEFT folder, what vLLM loads.

    ``folder`` gets ``adapter_config.json`` (the model's LoRA config) and
    ``adapter_model.safetensors`` (the tensors under peft's own key names), the files
    ``model.save_pretrained`` writes, but from ``state`` rather than the live adapter.
    """
    from safetensors.torch import save_file

    peft_model = _require_peft(model, "save_adapter_folder")
    prefix = f"{DEFAULT_ADAPTER}{KEY_SEPARATOR}"
    tensors = {
        key.removeprefix(prefix): tensor.detach().cpu().contiguous()
        for key, tensor in state.items()
        if key.startswith(prefix)
    }
    if not tensors or len(tensors) != len(state):
        raise ValueError("save_adapter_folder writes one 'default' adapter (not per-role ones).")
    config = copy.copy(peft_model.peft_config[DEFAULT_ADAPTER])
    config.inference_mode = True  # as peft writes it: a frozen adapter
    if isinstance(config.target_modules, set):  # peft keeps a set, which JSON cannot hold
        config.target_modules = sorted(config.target_modules)
    config.save_pretrained(str(folder))
    save_file(tensors, str(Path(folder) / "adapter_model.safetensors"), metadata={"format": "pt"})


def resolve_target_modules(model: torch.nn.Module, requested: Sequence[str] | None) -> list[str]:
    """The module-name suffixes to adapt: ``requested`` checked, or the detected default."""
    linear = _linear_module_names(model)
    if requested is not None:
        every = [name for name, _ in model.named_modules()]
        missing = [t for t in requested if not any(_matches(n, t) for n in every)]
        if missing:
            raise ValueError(
                f"LoRA target_modules {missing} match no module of this model; "
                f"its Linear modules are {_leaf_names(linear)}."
            )
        return list(requested)
    found = [
        [t for t in family if any(_matches(n, t) for n in linear)] for family in DEFAULT_TARGETS
    ]
    best = max(found, key=len)
    if not best:
        raise ValueError(
            "Found no attention projections to put LoRA adapters on; set lora.target_modules "
            f"to some of this model's Linear modules: {_leaf_names(linear)}."
        )
    return best


# ---- helpers --------------------------------------------------------------------------------


def _adapter_names(config: LoraConfig, roles: Sequence[str]) -> list[str]:
    if not config.per_role:
        return [DEFAULT_ADAPTER]
    names = list(dict.fromkeys(roles))
    if not names:
        raise ValueError("lora.per_role needs the game's roles: pass roles=game.roles.")
    return names


def _peft_config(model: torch.nn.Module, config: LoraConfig, targets: list[str]) -> Any:
    """A fresh peft config per adapter (peft keeps and may edit the object it is given)."""
    conv1d = any(
        isinstance(module, Conv1D) and any(_matches(name, t) for t in targets)
        for name, module in model.named_modules()
    )
    return peft.LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        lora_dropout=config.dropout,
        target_modules=list(targets),
        fan_in_fan_out=conv1d,  # GPT-2's Conv1D stores its weight transposed
        bias="none",
        task_type="CAUSAL_LM",
    )


def _activate(peft_model: PeftModel, name: str) -> None:
    """Make ``name`` the active adapter without changing any ``requires_grad`` flag."""
    flags = [(p, p.requires_grad) for p in peft_model.parameters()]
    peft_model.set_adapter(name)
    for parameter, flag in flags:
        parameter.requires_grad_(flag)


def _adapter_parameters(peft_model: PeftModel) -> Iterator[torch.nn.Parameter]:
    """Parameters of every adapter (all names) in peft's tuner layers."""
    for module in peft_model.modules():
        if isinstance(module, BaseTunerLayer):
            for attribute in module.adapter_layer_names:
                yield from getattr(module, attribute).parameters()


def _peft_state(peft_model: PeftModel, name: str) -> dict[str, torch.Tensor]:
    return get_peft_model_state_dict(peft_model, adapter_name=name, save_embedding_layers=False)


def _adapters(peft_model: PeftModel) -> list[str]:
    return sorted(peft_model.peft_config)


def _find_peft(model: Any) -> PeftModel | None:
    """The PeftModel itself or inside Fabric (``.module``), DDP or ``torch.compile`` wrappers."""
    for _ in range(8):
        if isinstance(model, PeftModel):
            return model
        inner = None
        for attribute in ("module", "_orig_mod"):
            candidate = getattr(model, attribute, None)
            if isinstance(candidate, torch.nn.Module):
                inner = candidate
                break
        if inner is None:
            return None
        model = inner
    return None


def _require_peft(model: Any, caller: str) -> PeftModel:
    peft_model = _find_peft(model)
    if peft_model is None:
        raise ValueError(
            f"{caller} needs a model wrapped by apply_lora (lora.enabled: true); "
            "without LoRA, keep a frozen copy of the model as the reference instead."
        )
    return peft_model


def _linear_module_names(model: torch.nn.Module) -> list[str]:
    return [
        name
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear | Conv1D)
    ]


def _leaf_names(names: Sequence[str]) -> list[str]:
    return sorted({name.rsplit(".", 1)[-1] for name in names})


def _matches(name: str, target: str) -> bool:
    """peft's rule for a listed target: the whole name, or a suffix after a dot."""
    return name == target or name.endswith(f".{target}")
