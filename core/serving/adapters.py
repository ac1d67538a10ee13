"""LoRA adapters a server holds by name (vLLM's dynamic-LoRA protocol), swapped into its one
base model while the requests that name them run.

``lora_path`` is a pool snapshot (``pool/snapshot-N.pt``), a checkpoint folder, or a PEFT
adapter folder written by ``selfplay export`` for the same run; each is a few tensors kept in
memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selfplay.api.policy import Policy


class HTTPProblem(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class Adapters:
    """LoRA adapter states by name, swapped into the served model's adapters while used."""

    def __init__(self, policy: Policy, lora: bool) -> None:
        self.policy, self.lora = policy, lora
        self.states: dict[str, dict[str, Any]] = {}

    def load(self, name: str, path: str) -> None:
        if not self.lora:
            raise HTTPProblem(
                400,
                "This server serves a full-weight checkpoint; adapters load onto the base of "
                "a LoRA run: serve a run trained with --lora.",
            )
        if name in self.states:
            raise HTTPProblem(400, f"The lora adapter {name!r} has already been loaded.")
        from selfplay.core.models.lora import adapter_state_dict, load_adapter_state_dict

        state = read_adapter(Path(path), adapter_state_dict(self.policy.model))
        current = adapter_state_dict(self.policy.model)
        try:
            load_adapter_state_dict(self.policy.model, state)  # checks that it fits
        except (ValueError, RuntimeError) as err:  # other adapters, ranks or shapes
            lines = " ".join(str(err).strip().splitlines()[:2])[:400]
            raise HTTPProblem(
                400, f"The adapter at {path} does not fit this model: {lines}"
            ) from None
        finally:
            load_adapter_state_dict(self.policy.model, current)
        self.states[name] = state

    def unload(self, name: str) -> None:
        if self.states.pop(name, None) is None:
            raise HTTPProblem(404, f"The lora adapter {name!r} is not loaded.")

    @contextmanager
    def use(self, name: str | None) -> Iterator[None]:
        if name is None:
            yield
            return
        from selfplay.core.models.lora import adapter_state_dict, load_adapter_state_dict

        current = adapter_state_dict(self.policy.model)
        load_adapter_state_dict(self.policy.model, self.states[name])
        try:
            yield
        finally:
            load_adapter_state_dict(self.policy.model, current)


def read_adapter(path: Path, like: dict[str, Any]) -> dict[str, Any]:
    """An `adapter_state_dict` from a snapshot file, checkpoint folder or PEFT folder."""
    import torch

    try:
        if path.is_file():
            return torch.load(path, map_location="cpu", weights_only=True)
        if (path / "state.ckpt").is_file():
            state = torch.load(path / "state.ckpt", map_location="cpu", weights_only=True)
            return state["adapters"]
        if path.is_dir():
            return _peft_folder(path, like)
    except HTTPProblem:
        raise
    except Exception as err:  # damaged or foreign files
        why = f"{type(err).__name__}: {err}"
        raise HTTPProblem(400, f"Cannot read an adapter from {path}: {why}") from None
    raise HTTPProblem(
        400,
        f"No adapter at {path} (on the server's machine): pass a pool snapshot (.pt), a "
        "checkpoint folder or a PEFT adapter folder.",
    )


def _peft_folder(path: Path, like: dict[str, Any]) -> dict[str, Any]:
    from safetensors.torch import load_file

    names = sorted({key.partition("/")[0] for key in like})
    state: dict[str, Any] = {}
    for name in names:
        folder = path if name == "default" else path / name
        file = folder / "adapter_model.safetensors"
        if not file.is_file():
            raise HTTPProblem(400, f"No adapter_model.safetensors in {folder} (adapter {name!r}).")
        state.update({f"{name}/{key}": tensor for key, tensor in load_file(file).items()})
    return state
