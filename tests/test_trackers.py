"""Experiment trackers: `--logger csv,tensorboard,wandb,mlflow`, offline W&B and an MLflow file
store in the run folder, the config as parameters, and the same tracker run after --resume."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.core.commands.cli import main
from selfplay.core.config import RunConfig
from selfplay.core.plan.config_loader import build_config
from selfplay.core.run.trackers import check_loggers


def train(out: Path, name: str, *extra: str) -> int:
    args = ["run", "--game", "tictactoe", "--cold-start", "0", "--iterations", "2"]
    args += ["--matches", "2", "--set", "eval.matches=2", "--set", "threads=1"]
    threads = torch.get_num_threads()
    try:
        return main([*args, "--out", str(out), "--name", name, *extra])
    finally:
        torch.set_num_threads(threads)


def test_logger_names_read_from_a_flag_or_a_list_and_bad_ones_are_named():
    assert build_config(None, {"loggers": "csv, mlflow"}, []).loggers == ["csv", "mlflow"]
    assert RunConfig().loggers == ["csv", "tensorboard"]
    with pytest.raises(ConfigError, match=r"'tensorbored'.*choose from csv, mlflow, tensorboard"):
        check_loggers(build_config(None, {"loggers": "csv,tensorbored"}, []).loggers, {})
    with pytest.raises(ConfigError, match=r"logger_options.wandb.projekt.*project"):
        check_loggers(["wandb"], {"wandb": {"projekt": "x"}})
    with pytest.raises(ConfigError, match=r"logger_options.comet: no such tracker"):
        check_loggers(["csv"], {"comet": {}})


def test_a_missing_tracker_package_stops_the_run_before_it_starts(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )
    assert train(tmp_path, "x", "--logger", "csv,wandb") == 2
    err = capsys.readouterr().err
    assert 'pip install "selfplay-rl[wandb]"' in " ".join(err.split())
    assert not (tmp_path / "x").exists()  # the same command works once it is installed


def test_csv_alone_writes_no_tensorboard_log(tmp_path):
    assert train(tmp_path, "x", "--logger", "csv") == 0
    assert (tmp_path / "x" / "metrics.csv").exists()
    assert not (tmp_path / "x" / "tensorboard").exists()


def test_mlflow_file_store_gets_the_config_and_every_row_and_resume_keeps_its_run(
    tmp_path, monkeypatch
):
    pytest.importorskip("mlflow")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    assert train(tmp_path, "m", "--logger", "csv,mlflow", "--set", "opponent=fixed:random") == 0
    folder = tmp_path / "m"
    run_id = json.loads((folder / "trackers.json").read_text())["mlflow"]
    assert main(["run", "--resume", str(folder), "--iterations", "3"]) == 0
    assert json.loads((folder / "trackers.json").read_text())["mlflow"] == run_id

    from mlflow.tracking import MlflowClient

    client = MlflowClient((folder / "mlruns").resolve().as_uri())
    run = client.get_run(run_id)
    assert run.data.params["game"] == "tictactoe"
    assert run.data.params["train/lr"] == "0.0001"
    history = client.get_metric_history(run_id, "mean_reward")
    assert [m.step for m in history] == [1, 2, 3]
    csv_rows = (folder / "metrics.csv").read_text().splitlines()[1:]
    assert len(csv_rows) == 3
    assert "matches" in run.data.metrics and "matches.errors" in run.data.metrics
    assert "reward.outcome.player_0" in run.data.metrics


def test_wandb_offline_run_records_metrics_and_config_in_the_run_folder(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    for key in ("WANDB_API_KEY", "WANDB_MODE"):
        monkeypatch.delenv(key, raising=False)
    offline = ["--set", "logger_options.wandb.offline=true"]
    offline += ["--set", "logger_options.wandb.project=t"]
    assert train(tmp_path, "w", "--logger", "csv,tensorboard,wandb", *offline) == 0
    folder = tmp_path / "w"
    run_id = json.loads((folder / "trackers.json").read_text())["wandb"]
    runs = list((folder / "wandb").glob(f"offline-run-*-{run_id}"))
    assert len(runs) == 1, os.listdir(folder / "wandb")
    import wandb

    wandb.teardown()  # the W&B service writes the run's record file out as it stops
    record = (runs[0] / f"run-{run_id}.wandb").read_bytes()
    assert b"mean_reward" in record and b"tictactoe" in record
    assert (folder / "tensorboard").exists()


def test_a_plug_in_tracker_gets_every_row_and_its_options(tmp_path, monkeypatch):
    """A tracker registered through the hook is named like the built-ins (--logger NAME)."""
    from pydantic import Field

    from selfplay.api.callback import Tracker
    from selfplay.api.options import Options as Base
    from selfplay.plugins.manager import registries
    from selfplay.plugins.registry import Entry

    seen: dict[str, list] = {"rows": [], "ends": []}

    class Remembering(Tracker):
        name = "remembering"

        class Options(Base):
            label: str = Field(default="x", description="a label")

        def log(self, row, step):
            seen["rows"].append((self.options.label, step, "mean_reward" in row))

        def finalize(self, status):
            seen["ends"].append(status)

    entries = registries().trackers.entries
    monkeypatch.setitem(entries, "remembering", Entry("remembering", Remembering, "tests"))
    extra = ["--logger", "remembering", "--set", "logger_options.remembering.label=y"]
    assert train(tmp_path, "x", *extra) == 0
    assert seen == {"rows": [("y", 1, True), ("y", 2, True)], "ends": ["success"]}
    assert (tmp_path / "x" / "metrics.csv").exists()  # csv is always written
    with pytest.raises(ConfigError, match=r"logger_options.remembering.lable.*label"):
        check_loggers(["remembering"], {"remembering": {"lable": "z"}})
