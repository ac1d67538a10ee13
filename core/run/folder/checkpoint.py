"""Checkpoints: written atomically, checked on the way back, the previous good one kept.

Layout inside a run folder::

    checkpoints/iter-000012/state.ckpt     model (or LoRA adapters), optimizer, estimator,
                                            sampler, RNG states, counters, config hash
    checkpoints/iter-000012/config.yaml    a copy of the run's config (to repair the original)
    checkpoints/iter-000012/manifest.json  size and SHA-256 of every file above
    checkpoints/latest                     the name of the newest checkpoint (for people)

A checkpoint is written to ``.tmp-iter-N``, its manifest last, and renamed into place, so a
run killed while writing leaves the previous checkpoint intact. What counts on the way back is
not the ``latest`` pointer but a scan: the newest ``iter-N`` whose files match its manifest
(a zero-byte, truncated or bit-flipped file does not) is the one to resume; damaged ones are
reported and set aside as ``damaged-iter-N``, never deleted. Folders written before manifests
existed are accepted when their state file is not empty.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfplay.core.config.changes import NOT_TRAINING, default_of

KEEP = 2  # the newest checkpoint and the one before it


STATE, MANIFEST, CONFIG = "state.ckpt", "manifest.json", "config.yaml"
ITERATION = re.compile(r"^iter-(\d+)$")
DAMAGED = "damaged-"


class StorageError(RuntimeError):
    """A file of the run folder could not be written or read (disk full, read-only, damaged);
    the message names the file (exit code 4)."""


class CheckpointError(StorageError):
    """A checkpoint could not be written or read; the message names the path."""


class UnreadableCheckpoint(CheckpointError):
    """A checkpoint's files are there but do not load; an older one may still."""


@dataclass
class Found:
    """What a scan of ``checkpoints/`` found, newest first."""

    complete: list[Path] = field(default_factory=list)
    damaged: list[tuple[Path, str]] = field(default_factory=list)  # (folder, what is wrong)
    never: bool = True  # no checkpoint was ever written: nothing a fresh start could lose

    def report(self) -> str:
        return "; ".join(f"{path.name}: {why}" for path, why in self.damaged)


# Settings added after the first release: left out of the hash while they hold the schema's
# default, so checkpoints written before they existed still match (checkpoints compare by
# their copy of config.yaml first: core/config/changes.py).
LATER_KEYS = (
    "objective",
    "learners",
    "objective_options",
    "rollout",
    "train.micro_batch_tokens",
    "train.dropout",
    "train.lr_decay_iterations",
    "train.kl_coef_min",
    "hardware.malloc_trim",
)
# settings that do not shape training, left out of the hash; the time limit is left out as
# well, see config_hash
UNHASHED = frozenset({"iterations", *NOT_TRAINING})


def config_hash(config_json: dict[str, Any], *, with_minutes: bool = False) -> str:
    """Hash of the settings that shape training (not the iteration count, the time limit or
    paths). ``with_minutes``: as checkpoints hashed before a resume could set a new limit."""
    ignored = UNHASHED if with_minutes else UNHASHED | {"minutes"}
    stable = {
        k: _without_later(k, v)
        for k, v in config_json.items()
        if k not in ignored and not (k in LATER_KEYS and v == default_of(k))
    }
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]


def _without_later(section: str, value: Any) -> Any:
    """A section's keys, less those added later (``train.micro_batch_tokens``) at default."""
    if not isinstance(value, dict):
        return value
    later = {k.split(".", 1)[1] for k in LATER_KEYS if k.startswith(section + ".")}
    return {
        k: v for k, v in value.items() if not (k in later and v == default_of(f"{section}.{k}"))
    }


def save(
    fabric: Any, folder: Path, iteration: int, state: dict[str, Any], files: dict[str, str]
) -> Path:
    """Write ``state`` (and the text ``files``) for ``iteration`` under ``folder/checkpoints``.

    Every rank calls this. A failed write (a full disk) removes its partial folder and leaves
    the previous checkpoint as it was.
    """
    root = folder / "checkpoints"
    name = f"iter-{iteration:06d}"
    tmp, final = root / f".tmp-{name}", root / name
    main = fabric.global_rank == 0
    try:
        if main:
            root.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
        fabric.barrier()
        fabric.save(tmp / STATE, state)
        fabric.barrier()
        if main:
            for file_name, text in files.items():
                (tmp / file_name).write_text(text)
            _write_atomic(tmp / MANIFEST, json.dumps(_manifest(tmp), indent=1))
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
            _write_atomic(root / "latest", name)
            _prune(root, keep=KEEP)
        fabric.barrier()
    except (OSError, RuntimeError) as err:
        if main:
            shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointError(
            f"Cannot write the checkpoint {final}: {_reason(err)} ({free_space(root)} free "
            "there). Its partial folder was removed and the previous checkpoint is intact; "
            "free space (or make the folder writable) and continue with --resume."
        ) from None
    return final


def scan(folder: Path) -> Found:
    """The checkpoints of the run folder ``folder``: complete ones and damaged ones."""
    root = Path(folder) / "checkpoints"
    found = Found()
    if not root.is_dir():
        return found
    entries = list(root.iterdir())
    numbered = [(int(m.group(1)), p) for p in entries if (m := ITERATION.match(p.name))]
    for _, path in sorted(numbered, reverse=True):
        why = verify(path)
        if why is None:
            found.complete.append(path)
        else:
            found.damaged.append((path, why))
    found.never = not numbered and not any(
        p.name == "latest" or p.name.startswith(DAMAGED) for p in entries
    )
    return found


def latest(folder: Path) -> Path | None:
    """The newest complete checkpoint of the run folder ``folder``, if any."""
    complete = scan(folder).complete
    return complete[0] if complete else None


def verify(path: Path) -> str | None:
    """What is wrong with the checkpoint folder ``path``, or None when it is complete."""
    state = path / STATE
    if not state.exists():
        return f"{STATE} is missing"
    try:
        recorded = json.loads((path / MANIFEST).read_text())["files"]
    except FileNotFoundError:  # written before manifests existed: the load decides
        return f"{STATE} is empty (0 bytes)" if _size(state) == 0 else None
    except (OSError, ValueError, KeyError, TypeError):
        return f"its {MANIFEST} is damaged"
    for name, expected in recorded.items():
        file = path / name
        if not file.is_file():
            return f"{name} is missing"
        size = file.stat().st_size
        if size != expected["bytes"]:
            return f"{name} is {size} bytes, {expected['bytes']} were written (truncated?)"
        if _sha256(file) != expected["sha256"]:
            return f"{name} does not match its checksum (the file is damaged)"
    return None


def set_aside(found: Found) -> list[Path]:
    """Rename damaged checkpoints to ``damaged-iter-N`` (kept for the user, out of the way)
    and remove partial ``.tmp-`` folders of interrupted writes; returns the new names."""
    moved = []
    for path, _ in found.damaged:
        target = path.with_name(DAMAGED + path.name)
        n = 1
        while target.exists():
            n += 1
            target = path.with_name(f"{DAMAGED}{path.name}-{n}")
        os.replace(path, target)
        moved.append(target)
    roots = {path.parent for path, _ in found.damaged} | {p.parent for p in found.complete}
    for root in roots:
        for partial in root.glob(".tmp-iter-*"):
            shutil.rmtree(partial, ignore_errors=True)
    return moved


def load(fabric: Any, path: Path, state: dict[str, Any]) -> dict[str, Any]:
    """Load in place into the objects of ``state``; returns the plain values stored."""
    try:
        return fabric.load(path / STATE, state)
    except Exception as err:  # torch raises EOFError, RuntimeError, UnpicklingError, ...
        raise UnreadableCheckpoint(f"Cannot read the checkpoint {path}: {_reason(err)}.") from None


def _manifest(folder: Path) -> dict[str, Any]:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    return {
        "files": {
            str(p.relative_to(folder)): {"bytes": p.stat().st_size, "sha256": _sha256(p)}
            for p in files
        }
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def free_space(path: Path) -> str:
    """``'12.5 MB'``: the space left on the disk holding ``path`` (or its nearest parent)."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return f"{shutil.disk_usage(path).free / 1e6:.1f} MB"
    except OSError:
        return "unknown space"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _prune(root: Path, keep: int) -> None:
    numbered = [(int(m.group(1)), p) for p in root.iterdir() if (m := ITERATION.match(p.name))]
    for _, old in sorted(numbered)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
