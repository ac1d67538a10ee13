"""Experiment trackers: where a run's metrics go besides ``metrics.csv``.

``loggers`` names them (``--logger csv,tensorboard,wandb,mlflow``):

csv          ``metrics.csv``, always written: ``--resume``, ``selfplay report`` and ``show`` read it
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
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.core.config import LOGGERS

PACKAGES = {"wandb": "wandb", "mlflow": "mlflow"}
OPTIONS = {
    "wandb": {
        "project": "W&B project (default selfplay)",
        "entity": "W&B team or user (default: your default entity)",
        "offline": "true: write the run under RUN_DIR/wandb and sync later (`wandb sync`)",
        "group": "W&B run group",
        "tags": "list of W&B tags",
    },
    "mlflow": {
        "tracking_uri": "MLflow server or store (default $MLFLOW_TRACKING_URI, else a file "
        "store in RUN_DIR/mlruns)",
        "experiment": "MLflow experiment name (default selfplay)",
    },
}
IDS_FILE = "trackers.json"


def check_loggers(names: list[str], options: dict[str, dict[str, Any]]) -> None:
    """Refuse, before anything runs, an unknown tracker, an unknown option or a missing package."""
    for name in names:
        if name not in LOGGERS:
            raise ConfigError(
                f"unknown logger {name!r}: choose from {', '.join(LOGGERS)} "
                "(e.g. --logger csv,tensorboard,wandb)"
            )
    for name, given in options.items():
        if name not in OPTIONS:
            raise ConfigError(
                f"logger_options.{name}: no such tracker; trackers with options: "
                f"{', '.join(OPTIONS)}"
            )
        for key in given:
            if key not in OPTIONS[name]:
                valid = "; ".join(f"{k}: {d}" for k, d in OPTIONS[name].items())
                raise ConfigError(f"logger_options.{name}.{key}: unknown option. Valid: {valid}")
    for name in names:
        module = PACKAGES.get(name)
        if module and importlib.util.find_spec(module) is None:
            raise ConfigError(
                f"--logger {name} needs the {module} package: "
                f'pip install "selfplay-rl[{name}]" (or drop {name} from --logger)'
            )


class Trackers:
    """The run's trackers behind one ``log`` and one ``finalize``.

    TensorBoard is opened at the first row, as before; W&B and MLflow are opened here, so a
    login or server problem stops the run before it spends time training."""

    def __init__(self, folder: Any, config: Any) -> None:
        names = list(config.loggers)
        check_loggers(names, config.logger_options)
        self.folder, self.config = folder, config
        self.tensorboard: Any = None
        self.use_tensorboard = "tensorboard" in names
        self.ids = _read_ids(folder.path)
        self.others: dict[str, Any] = {}
        params = config.model_dump(mode="json")
        for name in ("wandb", "mlflow"):
            if name in names:
                new = name not in self.ids
                self.others[name] = _OPEN[name](self, config.logger_options.get(name, {}))
                if new:  # a resumed run keeps the parameters it started with
                    self.others[name].log_hyperparams(params)
        if self.others:
            _write_ids(folder.path, self.ids)

    def log(self, row: dict[str, Any]) -> None:
        if self.use_tensorboard:
            if self.tensorboard is None:
                self.tensorboard = self.folder.tensorboard()
            self.tensorboard.log(row)
        if not self.others:
            return
        numbers = {k: float(v) for k, v in row.items() if isinstance(v, int | float)}
        step = int(row["iteration"])
        for name, logger in self.others.items():
            logger.log_metrics(_mlflow_names(numbers) if name == "mlflow" else numbers, step)

    def finalize(self, status: str) -> None:
        if self.tensorboard is not None:
            self.tensorboard.finalize(status)
        for logger in self.others.values():
            logger.finalize(status)
        if "wandb" in self.others:
            import wandb

            wandb.finish(exit_code=0 if status == "success" else 1)

    # ---- the two hosted trackers --------------------------------------------------------

    def _wandb(self, options: dict[str, Any]) -> Any:
        from lightning.pytorch.loggers import WandbLogger

        logger = WandbLogger(
            name=self.folder.path.name,
            project=options.get("project", "selfplay"),
            entity=options.get("entity"),
            group=options.get("group"),
            tags=options.get("tags"),
            offline=bool(options.get("offline", False)),
            save_dir=str(self.folder.path),
            id=self.ids.get("wandb"),
            resume="allow",
        )
        try:
            self.ids["wandb"] = logger.experiment.id
        except Exception as err:  # not logged in, no network, a bad entity
            raise ConfigError(
                f"W&B could not start a run ({type(err).__name__}: {err}). Log in with "
                "`wandb login`, or write offline with --set logger_options.wandb.offline=true "
                "(or WANDB_MODE=offline) and `wandb sync` later."
            ) from None
        return logger

    def _mlflow(self, options: dict[str, Any]) -> Any:
        from lightning.pytorch.loggers import MLFlowLogger

        uri = options.get("tracking_uri") or os.environ.get("MLFLOW_TRACKING_URI")
        if not uri:
            # MLflow keeps its file store working only on request; it is the one that needs
            # no server and no database, so a run folder can hold its own.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
            uri = (self.folder.path / "mlruns").resolve().as_uri()
        try:
            logger = MLFlowLogger(
                experiment_name=options.get("experiment", "selfplay"),
                run_name=self.folder.path.name,
                tracking_uri=uri,
                run_id=self.ids.get("mlflow"),
            )
            self.ids["mlflow"] = logger.run_id
        except Exception as err:
            raise ConfigError(
                f"MLflow could not start a run at {uri} ({type(err).__name__}: {err}). Check "
                "the server is up, or set --set logger_options.mlflow.tracking_uri=..."
            ) from None
        return logger


_OPEN = {"wandb": Trackers._wandb, "mlflow": Trackers._mlflow}
_MLFLOW_BAD = re.compile(r"[^A-Za-z0-9_\-. ]")


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
