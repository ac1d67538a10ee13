"""Checkpoints: written atomically, the previous good one kept, resumed exactly.

Layout inside a run folder::

    checkpoints/iter-000012/state.ckpt   model (or LoRA adapters), optimizer, estimator,
                                          sampler, RNG states, counters, config hash
    checkpoints/latest                    the name of the newest complete checkpoint

A checkpoint is written to ``.tmp-iter-N`` and renamed into place, so a run killed while
writing leaves the previous checkpoint intact; ``latest`` is replaced atomically too.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

KEEP = 2  # the newest checkpoint and the one before it


class CheckpointError(RuntimeError):
    """A checkpoint could not be written or read; the message names the path."""


# Keys added after the first release, with their defaults: left out of the hash while they
# hold the default, so run folders written before they existed still resume.
LATER_KEYS = {"objective": "pg", "objective_options": {}}


def config_hash(config_json: dict[str, Any]) -> str:
    """Hash of the settings that shape training (not the iteration count or paths)."""
    ignored = {"iterations", "resume", "out", "name", "eval"}
    stable = {
        k: v
        for k, v in config_json.items()
        if k not in ignored and not (k in LATER_KEYS and v == LATER_KEYS[k])
    }
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]


def rng_state(run_rng: random.Random, generator: torch.Generator) -> dict[str, Any]:
    return {
        "run": run_rng.getstate(),
        "python": random.getstate(),
        "numpy": _numpy_state(),
        "torch": torch.get_rng_state(),
        "update": generator.get_state(),
    }


def restore_rng(state: dict[str, Any], run_rng: random.Random, generator: torch.Generator) -> None:
    run_rng.setstate(state["run"])
    random.setstate(state["python"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    generator.set_state(state["update"])


def _numpy_state() -> tuple[Any, ...]:
    # plain Python values: checkpoints load with torch.load(weights_only=True)
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return name, keys.tolist(), int(pos), int(has_gauss), float(cached)


def save(fabric: Any, folder: Path, iteration: int, state: dict[str, Any]) -> Path:
    """Write ``state`` for ``iteration`` under ``folder/checkpoints``; every rank calls this."""
    root = folder / "checkpoints"
    name = f"iter-{iteration:06d}"
    tmp, final = root / f".tmp-{name}", root / name
    try:
        if fabric.global_rank == 0:
            root.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
        fabric.barrier()
        fabric.save(tmp / "state.ckpt", state)
        fabric.barrier()
        if fabric.global_rank == 0:
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
            _write_atomic(root / "latest", name)
            _prune(root, keep=KEEP)
        fabric.barrier()
    except OSError as err:
        raise CheckpointError(f"Cannot write the checkpoint {final}: {err}.") from err
    return final


def latest(folder: Path) -> Path | None:
    pointer = folder / "checkpoints" / "latest"
    if not pointer.exists():
        return None
    path = folder / "checkpoints" / pointer.read_text().strip()
    return path if (path / "state.ckpt").exists() else None


def load(fabric: Any, path: Path, state: dict[str, Any]) -> dict[str, Any]:
    """Load in place into the objects of ``state``; returns the plain values stored."""
    try:
        return fabric.load(path / "state.ckpt", state)
    except (OSError, RuntimeError, KeyError) as err:
        raise CheckpointError(f"Cannot read the checkpoint {path}: {err}.") from err


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _prune(root: Path, keep: int) -> None:
    done = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("iter-"))
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
