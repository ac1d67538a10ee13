"""The run folder a user reads: config, metrics, episodes, checkpoints, TensorBoard logs.

config.yaml       the resolved configuration (what `--resume` continues)
metrics.csv       one row per iteration
episodes.jsonl    every match, one JSON line each
checkpoints/      resumable state (see core/run/folder/checkpoint.py)
tensorboard/      the same metrics for TensorBoard
summary.json      the closing evaluation, before and after training (summary.txt: its tables)
plots/            the run's figures (core/run/plots.py); ratings.csv, crossplay.csv: the league
trackers.json     W&B / MLflow run ids, with ``--logger wandb`` or ``mlflow`` (core/run/trackers.py)

A write that fails (a full disk, a read-only folder) raises a StorageError naming the file
and the space left; what was written up to the last checkpoint stays readable and resumable.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from selfplay.api.errors import ConfigError
from selfplay.api.types import Episode
from selfplay.core.config import RunConfig
from selfplay.core.config.changes import RESUMABLE, resumable, resumed
from selfplay.core.plan.config_loader import apply_override, explain
from selfplay.core.run.folder.checkpoint import CONFIG, StorageError, free_space, scan
from selfplay.core.run.folder.episode_log import write_episodes


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

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"

    def write_summary(
        self, before: dict[str, Any], after: dict[str, Any], tasks_before: Any, tasks_after: Any
    ) -> None:
        """The closing table as data (``summary.json``) and as printed (``summary.txt``)."""
        import io
        import json

        from rich.console import Console

        from selfplay.core.evaluate import summary_table, tasks_table

        data = {
            "before": {name: vars(result) for name, result in before.items()},
            "after": {name: vars(result) for name, result in after.items()},
            "tasks_before": dict(tasks_before or {}),
            "tasks_after": dict(tasks_after or {}),
        }
        text = io.StringIO()
        console = Console(file=text, width=100, color_system=None)
        if tasks_before or tasks_after:
            console.print(tasks_table(tasks_before or {}, tasks_after or {}))
        if before or after:
            console.print(summary_table(before, after))
        with writing(self.summary):
            self.summary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            self.summary.with_suffix(".txt").write_text(text.getvalue(), encoding="utf-8")

    def write_config(self, config: RunConfig) -> None:
        with writing(self.config):
            self.config.write_text(config_text(config))

    def append_episodes(self, episodes: Iterable[Episode]) -> None:
        with writing(self.episodes):
            write_episodes(self.episodes, episodes)

    def append_metrics(self, row: dict[str, Any]) -> None:
        with writing(self.metrics):
            self._append_metrics(row)

    def _append_metrics(self, row: dict[str, Any]) -> None:
        header = self._columns()
        if any(key not in header for key in row):  # a new column (e.g. the first eval)
            rows = self.read_metrics() if header else []
            rows.append({k: str(v) for k, v in row.items()})
            self._rewrite(rows)
            return
        with self.metrics.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=header or list(row))
            if not header:
                writer.writeheader()
            writer.writerow(row)

    def _columns(self) -> list[str]:
        """metrics.csv's columns as its first row reads them; [] while it has no row. Only
        the first two lines are read: a long run appends a row an iteration."""
        if not self.metrics.exists():
            return []
        with self.metrics.open(newline="") as f:
            first = next(csv.DictReader(f), None)
        return list(first) if first is not None else []

    def read_metrics(self) -> list[dict[str, str]]:
        with self.metrics.open(newline="") as f:
            return list(csv.DictReader(f))

    def truncate(self, iteration: int, episodes_bytes: int) -> None:
        """Forget what a killed run wrote after its last checkpoint (``iteration``).

        A row cut short by a failed write (a full disk) is dropped too.
        """
        if self.metrics.exists():
            with writing(self.metrics):
                rows = [r for r in self.read_metrics() if _row_iteration(r) <= iteration]
                self._rewrite(rows)
        if self.episodes.exists() and self.episodes_size() > episodes_bytes:
            with writing(self.episodes), self.episodes.open("r+b") as f:
                f.truncate(episodes_bytes)

    def tensorboard(self) -> TensorBoard:
        """A TensorBoard log in ``tensorboard/`` (Lightning's logger, made safe on a full disk)."""
        return TensorBoard(self.path / "tensorboard")

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


class TensorBoard:
    """The run's TensorBoard log. Its events are written by a thread of the TensorBoard
    writer; a failed write there (a full disk) would print a traceback, end the thread and
    later block the run on the writer's full queue. Here it is remembered instead, and the
    next `log` raises a StorageError naming the file."""

    def __init__(self, root: Path) -> None:
        from lightning.fabric.loggers import TensorBoardLogger

        self.root = root
        with writing(root):
            self.logger = TensorBoardLogger(root_dir=root, name="", version="")
            files = getattr(self.logger.experiment, "_get_file_writer", None)
            writer = getattr(files() if files else None, "event_writer", None)
        self.events = _Remembering(getattr(writer, "_ev_writer", None))
        worker = getattr(writer, "_worker", None)
        if self.events.inner is not None and hasattr(worker, "_record_writer"):
            writer._ev_writer = worker._record_writer = self.events  # both hold the file

    def log(self, row: dict[str, Any]) -> None:
        numbers = {k: float(v) for k, v in row.items() if isinstance(v, int | float)}
        with writing(self.root):
            self.logger.log_metrics(numbers, step=row["iteration"])
            if self.events.error is not None:
                raise self.events.error

    def finalize(self, status: str) -> None:
        with writing(self.root):
            self.logger.finalize(status)


class _Remembering:
    """Wraps the TensorBoard event file writer: the first OSError is kept, not raised."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.error = inner, None

    def write_event(self, event: Any) -> Any:
        return self._guarded(self.inner.write_event, event)

    def flush(self) -> Any:
        return self._guarded(self.inner.flush)

    def close(self) -> Any:
        return self._guarded(self.inner.close)

    def _guarded(self, call: Any, *args: Any) -> Any:
        if self.error is not None:
            return None
        try:
            return call(*args)
        except OSError as err:
            self.error = err
            return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _row_iteration(row: dict[str, Any]) -> float:
    """A row's iteration; infinity for a row that a failed write cut short."""
    try:
        complete = None not in row.values() and None not in row
        return int(row["iteration"]) if complete else float("inf")
    except (KeyError, TypeError, ValueError):
        return float("inf")


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn a failed write of ``path`` into a StorageError that says what to do."""
    try:
        yield
    except OSError as err:
        raise StorageError(
            f"Cannot write {path}: {err.strerror or err} ({free_space(path.parent)} free "
            "there); free space or make the folder writable."
        ) from None


def config_text(config: RunConfig) -> str:
    """The run's resolved config as config.yaml holds it (every checkpoint keeps a copy)."""
    data = config.model_dump(mode="json", exclude={"resume"})
    return yaml.safe_dump(data, sort_keys=False)


def open_run_folder(config: RunConfig, main: bool) -> RunFolder | None:
    """The run's folder on the main process (None on the others): the one ``--resume`` names,
    or a new one holding the resolved config."""
    if not main:
        return None
    if config.resume:
        return RunFolder(config.resume)
    folder = make_run_folder(config)
    folder.write_config(config)
    return folder


def resumed_settings(config: RunConfig, folder: RunFolder | None) -> dict[str, Any]:
    """What the resume ``config`` changed of the run ``folder``'s config.yaml ({KEY: value},
    core/config/changes.py); {} for a new run, and on the processes that have no folder."""
    if not config.resume or folder is None:
        return {}
    saved = read_config_data(folder.path)
    return resumed(saved, config.model_dump(mode="json", exclude={"resume"}))


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


def resume_config(
    folder: Path, iterations: int | None, changed: dict[str, Any], overrides: Sequence[str] = ()
) -> RunConfig:
    """The saved config of ``folder``, with a new total of iterations if one is given, and the
    ``overrides`` (``KEY=VALUE``) of settings a resume may change (core/config/changes.py:
    the time limit, the micro-batch budget, threads, trackers); ``changed`` names anything
    else the command line set, which is refused."""
    path = Path(folder) / "config.yaml"
    if not path.exists():
        raise ConfigError(f"Cannot resume {folder}: it has no config.yaml (not a run folder?).")
    refused = [*changed, *(a.partition("=")[0].strip() for a in overrides)]
    refused = [key for key in refused if not resumable(key)]
    if refused:
        allowed = ", ".join(RESUMABLE[1:])
        raise ConfigError(
            f"--resume continues {folder} with its saved settings, and may change only what "
            f"leaves the iterations already trained as they were: --iterations, and --set "
            f"{allowed} (also given: {', '.join(sorted(refused))}). Start a new run to change "
            "the others."
        )
    data = read_config_data(Path(folder))
    validate_config(Path(folder), data)  # the saved file first: its faults are its own
    if iterations is not None:
        data["iterations"] = iterations
    for assignment in overrides:
        apply_override(data, assignment)
    for key, value in changed.items():  # --logger
        data[key] = value
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(f"--resume {folder}: {explain(err)}") from None
    return config.model_copy(update={"resume": Path(folder)})


def read_config(folder: Path) -> RunConfig:
    """The config.yaml of the run folder ``folder``, checked; a damaged one is a ConfigError
    that says where the checkpoints keep a copy."""
    return validate_config(Path(folder), read_config_data(Path(folder)))


def read_config_data(folder: Path) -> dict[str, Any]:
    path = folder / "config.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(
            f"{path} is not valid YAML ({_yaml_problem(err)}).{_repair(folder)}"
        ) from None
    except OSError as err:
        raise StorageError(f"Cannot read {path}: {err.strerror or err}.") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds no settings (it is empty or damaged).{_repair(folder)}")
    return data


def _yaml_problem(err: Exception) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).strip().splitlines()[0]
    return f"{problem} at line {mark.line + 1}" if mark is not None else problem


def validate_config(folder: Path, data: dict[str, Any]) -> RunConfig:
    try:
        return RunConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(
            f"{folder / 'config.yaml'} is not a config this selfplay can read: {explain(err)}"
            f"{_repair(folder)}"
        ) from None


def _repair(folder: Path) -> str:
    """How to put back a damaged config.yaml from the copy its newest checkpoint keeps."""
    for checkpoint in scan(folder).complete:
        copy = checkpoint / CONFIG
        if copy.is_file():
            return f" Its checkpoint {checkpoint.name} keeps a copy: cp {copy} {folder / CONFIG}"
    return " Restore it from a backup, or start a new run."
