"""Trackers: where a run's metrics go. Plug-ins (`selfplay.api.callback.Tracker`), named by
``loggers`` (``--logger csv,tensorboard,wandb,mlflow``); the built-ins register here through
the same ``register_trackers`` hook as a third-party tracker:

csv          ``metrics.csv``, always written (added when not named): ``--resume``,
             ``selfplay report`` and ``show`` read it
tensorboard  ``RUN_DIR/tensorboard/`` (on by default)
wandb        Weights & Biases through Lightning's ``WandbLogger`` (the ``wandb`` extra)
mlflow       MLflow through Lightning's ``MLFlowLogger`` (the ``mlflow`` extra)

Each tracker gets every metrics row at its iteration; W&B and MLflow also get the resolved
config as parameters, once. Their run ids are kept in ``RUN_DIR/trackers.json``, so a resumed
run goes on in the same W&B / MLflow run. Only the main process logs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from selfplay.api.callback import Tracker
from selfplay.api.errors import ConfigError
from selfplay.api.options import Options
from selfplay.plugins.hookspecs import hookimpl
from selfplay.plugins.manager import registries

IDS_FILE = "trackers.json"
ALWAYS = "csv"  # the run's own record: resume, report and show read metrics.csv


def check_loggers(names: list[str], options: dict[str, dict[str, Any]]) -> None:
    """Refuse, before anything runs, an unknown tracker, an unknown option or a missing package."""
    known = registries().trackers
    for name in names:
        if name not in known:
            raise ConfigError(
                f"unknown logger {name!r}: choose from {', '.join(e.name for e in known)} "
                "(e.g. --logger csv,tensorboard,wandb; `selfplay plugins` shows who adds more)"
            )
    for name, given in options.items():
        if name not in known:
            raise ConfigError(
                f"logger_options.{name}: no such tracker; trackers: "
                f"{', '.join(e.name for e in known)}"
            )
        fields = getattr(known.get(name), "Options", Options).model_fields
        for key in given:
            if key not in fields:
                valid = "; ".join(f"{k}: {f.description}" for k, f in fields.items()) or "none"
                raise ConfigError(f"logger_options.{name}.{key}: unknown option. Valid: {valid}")
    for name in names:
        package = getattr(known.get(name), "package", None)
        if package and importlib.util.find_spec(package) is None:
            raise ConfigError(
                f"--logger {name} needs the {package} package: "
                f'pip install "selfplay-rl[{name}]" (or drop {name} from --logger)'
            )


class Trackers:
    """The run's trackers behind one ``log`` and one ``finalize`` (the main process only).

    Hosted trackers are opened here, so a login or server problem stops the run before it
    spends time training."""

    def __init__(self, folder: Any, config: Any) -> None:
        names = [ALWAYS, *(name for name in config.loggers if name != ALWAYS)]
        check_loggers(names, config.logger_options)
        ids = _read_ids(folder.path)
        self.trackers: dict[str, Tracker] = {}
        for name in names:
            factory = registries().trackers.get(name)
            options = config.logger_options.get(name, {})
            self.trackers[name] = factory(folder.path, config, run_id=ids.get(name), **options)
        kept = {name: t.run_id for name, t in self.trackers.items() if t.run_id is not None}
        if kept:
            _write_ids(folder.path, {**ids, **kept})

    def log(self, row: dict[str, Any]) -> None:
        step = int(row["iteration"])
        for tracker in self.trackers.values():
            tracker.log(row, step)

    def finalize(self, status: str) -> None:
        for tracker in self.trackers.values():
            tracker.finalize(status)


# ---- the built-in trackers ------------------------------------------------------------------


class CsvTracker(Tracker):
    """metrics.csv in the run folder: one row an iteration, a column a metric."""

    name = "csv"

    def __init__(self, folder: Path, config: Any, run_id: str | None = None, **options: Any):
        super().__init__(folder, config, run_id, **options)
        from selfplay.core.run.folder.run_folder import RunFolder

        self.run_folder = RunFolder(self.folder)

    def log(self, row: Mapping[str, Any], step: int) -> None:
        self.run_folder.append_metrics(dict(row))


class TensorBoardTracker(Tracker):
    """TensorBoard event files in RUN_DIR/tensorboard/ (opened at the first row)."""

    name = "tensorboard"

    def __init__(self, folder: Path, config: Any, run_id: str | None = None, **options: Any):
        super().__init__(folder, config, run_id, **options)
        self.board: Any = None

    def log(self, row: Mapping[str, Any], step: int) -> None:
        if self.board is None:
            from selfplay.core.run.folder.run_folder import TensorBoard  # the safe writer

            self.board = TensorBoard(self.folder / "tensorboard")
        self.board.log(dict(row))

    def finalize(self, status: str) -> None:
        if self.board is not None:
            self.board.finalize(status)


class WandbOptions(Options):
    project: str = Field(default="selfplay", description="W&B project (default selfplay)")
    entity: str | None = Field(
        default=None, description="W&B team or user (default: your default entity)"
    )
    offline: bool = Field(
        default=False,
        description="true: write the run under RUN_DIR/wandb and sync later (`wandb sync`)",
    )
    group: str | None = Field(default=None, description="W&B run group")
    tags: list[str] | None = Field(default=None, description="list of W&B tags")


class WandbTracker(Tracker):
    """Weights & Biases, through Lightning's WandbLogger; the config as its parameters."""

    name = "wandb"
    Options = WandbOptions
    package = "wandb"

    def __init__(self, folder: Path, config: Any, run_id: str | None = None, **options: Any):
        super().__init__(folder, config, run_id, **options)
        from lightning.pytorch.loggers import WandbLogger

        o = self.options
        self.logger = WandbLogger(
            name=self.folder.name,
            project=o.project,
            entity=o.entity,
            group=o.group,
            tags=o.tags,
            offline=o.offline,
            save_dir=str(self.folder),
            id=run_id,
            resume="allow",
        )
        try:
            self.run_id = self.logger.experiment.id
        except Exception as err:  # not logged in, no network, a bad entity
            raise ConfigError(
                f"W&B could not start a run ({type(err).__name__}: {err}). Log in with "
                "`wandb login`, or write offline with --set logger_options.wandb.offline=true "
                "(or WANDB_MODE=offline) and `wandb sync` later."
            ) from None
        if run_id is None:  # a resumed run keeps the parameters it started with
            self.logger.log_hyperparams(config.model_dump(mode="json"))

    def log(self, row: Mapping[str, Any], step: int) -> None:
        self.logger.log_metrics(_numbers(row), step)

    def finalize(self, status: str) -> None:
        self.logger.finalize(status)
        import wandb

        wandb.finish(exit_code=0 if status == "success" else 1)


class MlflowOptions(Options):
    tracking_uri: str | None = Field(
        default=None,
        description="MLflow server or store (default $MLFLOW_TRACKING_URI, else a file store "
        "in RUN_DIR/mlruns)",
    )
    experiment: str = Field(default="selfplay", description="MLflow experiment name")


class MlflowTracker(Tracker):
    """MLflow, through Lightning's MLFlowLogger; a file store in the run folder by default."""

    name = "mlflow"
    Options = MlflowOptions
    package = "mlflow"

    def __init__(self, folder: Path, config: Any, run_id: str | None = None, **options: Any):
        super().__init__(folder, config, run_id, **options)
        from lightning.pytorch.loggers import MLFlowLogger

        uri = self.options.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        if not uri:
            # MLflow keeps its file store working only on request; it is the one that needs
            # no server and no database, so a run folder can hold its own.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
            uri = (self.folder / "mlruns").resolve().as_uri()
        try:
            self.logger = MLFlowLogger(
                experiment_name=self.options.experiment,
                run_name=self.folder.name,
                tracking_uri=uri,
                run_id=run_id,
            )
            self.run_id = self.logger.run_id
        except Exception as err:
            raise ConfigError(
                f"MLflow could not start a run at {uri} ({type(err).__name__}: {err}). Check "
                "the server is up, or set --set logger_options.mlflow.tracking_uri=..."
            ) from None
        if run_id is None:
            self.logger.log_hyperparams(config.model_dump(mode="json"))

    def log(self, row: Mapping[str, Any], step: int) -> None:
        self.logger.log_metrics(_mlflow_names(_numbers(row)), step)

    def finalize(self, status: str) -> None:
        self.logger.finalize(status)


@hookimpl
def register_trackers(register):
    for tracker in (CsvTracker, TensorBoardTracker, WandbTracker, MlflowTracker):
        register(tracker.name, tracker)


_MLFLOW_BAD = re.compile(r"[^A-Za-z0-9_\-. ]")


def _numbers(row: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if isinstance(v, int | float)}


def _mlflow_names(numbers: dict[str, float]) -> dict[str, float]:
    """MLflow's names: ``/`` becomes ``.`` (its file store keeps each metric as a file, so
    ``matches`` and ``matches/errors`` could not both exist) and the characters MLflow refuses
    (``fixed:random``) become ``_``."""
    return {_MLFLOW_BAD.sub("_", k.replace("/", ".")): v for k, v in numbers.items()}


def _read_ids(folder: Path) -> dict[str, str]:
    path = folder / IDS_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def _write_ids(folder: Path, ids: dict[str, str]) -> None:
    (folder / IDS_FILE).write_text(json.dumps(ids, indent=2) + "\n")
