"""The run folder a user reads: config, metrics, episodes, checkpoints, TensorBoard logs.

config.yaml       the resolved configuration (what `--resume` continues)
metrics.csv       one row per iteration
episodes.jsonl    every match, one JSON line each
checkpoints/      resumable state (see core/train/checkpoint.py)
tensorboard/      the same metrics for TensorBoard
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from selfplay.core.config import ConfigError, RunConfig


@dataclass
class RunFolder:
    path: Path

    @property
    def episodes(self) -> Path:
        return self.path / "episodes.jsonl"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.csv"

    @property
    def config(self) -> Path:
        return self.path / "config.yaml"

    def write_config(self, config: RunConfig) -> None:
        data = config.model_dump(mode="json", exclude={"resume"})
        self.config.write_text(yaml.safe_dump(data, sort_keys=False))

    def append_metrics(self, row: dict[str, Any]) -> None:
        rows = self.read_metrics() if self.metrics.exists() else []
        header = list(rows[0]) if rows else []
        if any(key not in header for key in row):  # a new column (e.g. the first eval)
            rows.append({k: str(v) for k, v in row.items()})
            self._rewrite(rows)
            return
        with self.metrics.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=header or list(row))
            if not header:
                writer.writeheader()
            writer.writerow(row)

    def read_metrics(self) -> list[dict[str, str]]:
        with self.metrics.open(newline="") as f:
            return list(csv.DictReader(f))

    def truncate(self, iteration: int, episodes_bytes: int) -> None:
        """Forget what a killed run wrote after its last checkpoint (``iteration``)."""
        if self.metrics.exists():
            rows = [r for r in self.read_metrics() if int(r["iteration"]) <= iteration]
            self._rewrite(rows)
        if self.episodes.exists():
            with self.episodes.open("r+b") as f:
                f.truncate(episodes_bytes)

    def episodes_size(self) -> int:
        return self.episodes.stat().st_size if self.episodes.exists() else 0

    def _rewrite(self, rows: list[dict[str, Any]]) -> None:
        header: list[str] = []
        for row in rows:
            header += [k for k in row if k not in header]
        tmp = self.metrics.with_suffix(".csv.tmp")
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=header, restval="")
            writer.writeheader()
            writer.writerows(rows)
        tmp.replace(self.metrics)


def make_run_folder(config: RunConfig) -> RunFolder:
    name = config.name or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = Path(config.out) / name
    if path.exists() and any(path.iterdir()):
        raise ConfigError(
            f"Run folder {path} already exists and is not empty; choose another --name or "
            f"--out, or continue it with --resume {path}."
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"Cannot create the run folder {path}: {err.strerror}.") from None
    return RunFolder(path)


def resume_config(folder: Path, iterations: int | None, changed: dict[str, Any]) -> RunConfig:
    """The saved config of ``folder``, with a new total of iterations if one is given."""
    path = Path(folder) / "config.yaml"
    if not path.exists():
        raise ConfigError(f"Cannot resume {folder}: it has no config.yaml (not a run folder?).")
    if changed:
        keys = ", ".join(sorted(changed))
        raise ConfigError(
            f"--resume continues {folder} with its saved config; only --iterations may change "
            f"(also given: {keys}). Start a new run to change them."
        )
    data = yaml.safe_load(path.read_text())
    if iterations is not None:
        data["iterations"] = iterations
    config = RunConfig.model_validate(data)
    return config.model_copy(update={"resume": Path(folder)})
