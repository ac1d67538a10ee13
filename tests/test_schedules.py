"""Learning-rate and KL schedules (seed 004): their curves, what they set, and a resumed run
that goes on with the same values as an uninterrupted one."""

from __future__ import annotations

import csv
import itertools
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.commands.cli import main
from selfplay.core.config import TrainConfig
from selfplay.core.plan.config_loader import build_config, learner_flags
from selfplay.core.plan.recipes import resolve
from selfplay.core.train.schedules import apply_schedules, kl_at, lr_at, stretched


def test_warm_up_then_cosine_from_lr_to_its_floor_by_the_last_iteration():
    train = TrainConfig(lr=1e-3, lr_schedule="cosine", lr_warmup=2, lr_min=1e-4)
    rates = [lr_at(train, i, 12) for i in range(1, 13)]
    assert rates[:3] == pytest.approx([5e-4, 1e-3, 1e-3])
    assert rates[-1] == pytest.approx(1e-4)
    assert all(a > b for a, b in itertools.pairwise(rates[2:]))  # falls every step
    middle = lr_at(train, 2 + 1 + 9 // 2, 12)  # halfway along the cosine
    assert middle == pytest.approx(1e-4 + 9e-4 * (1 + math.cos(math.pi * 4 / 9)) / 2)
    constant = TrainConfig(lr=1e-3, lr_warmup=4)
    assert [lr_at(constant, i, 10) for i in (1, 4, 5, 10)] == pytest.approx(
        [2.5e-4, 1e-3] + [1e-3] * 2
    )


def test_cosine_over_fewer_iterations_than_the_run_then_holds_its_floor():
    train = TrainConfig(lr=1e-3, lr_schedule="cosine", lr_min=1e-4, lr_decay_iterations=6)
    rates = [lr_at(train, i, 20) for i in range(1, 21)]
    whole = TrainConfig(lr=1e-3, lr_schedule="cosine", lr_min=1e-4)
    assert rates[:6] == pytest.approx([lr_at(whole, i, 6) for i in range(1, 7)])  # a 6-run's
    assert rates[5:] == pytest.approx([1e-4] * 15)  # the floor from iteration 6 on
    assert lr_at(train, 30, 40) == pytest.approx(1e-4)  # whatever the run's length


def test_a_decay_length_the_schedule_does_not_read_is_refused():
    def planned(*settings: str, flags: dict | None = None):
        return resolve(build_config(None, flags or {}, list(settings)))

    with pytest.raises(ConfigError, match=r"train.lr_decay_iterations=60 is read by the cosine"):
        planned("train.lr_decay_iterations=60")
    with pytest.raises(ConfigError, match=r"after train.lr_warmup=4: give more than 5"):
        planned("train.lr_schedule=cosine", "train.lr_warmup=4", "train.lr_decay_iterations=5")
    # read where the schedule comes from elsewhere: a recipe's cosine, the run's for a learner
    assert planned("recipe=tictactoe-cosine", "train.lr_decay_iterations=30").train.lr_schedule == (
        "cosine"
    )
    learners = {"learners": learner_flags(["player_0", "player_1"])}
    mine = "learners.player_1.train.lr_decay_iterations=30"
    planned("train.lr_schedule=cosine", mine, flags=learners)
    with pytest.raises(ConfigError, match=r"learners.player_1.train.lr_decay_iterations=30"):
        planned(mine, flags=learners)


def test_the_kl_coefficient_grows_by_its_step_up_to_its_cap_and_never_below_zero():
    train = TrainConfig(kl_coef_step=0.02, kl_coef_max=0.15)
    assert [kl_at(0.1, train, i) for i in range(1, 6)] == pytest.approx(
        [0.1, 0.12, 0.14, 0.15, 0.15]
    )
    assert kl_at(0.05, TrainConfig(kl_coef_step=-0.02), 4) == 0.0
    with pytest.raises(ConfigError, match="lr_schedule"):
        build_config(None, {}, ["train.lr_schedule=linear"])


def test_a_falling_kl_coefficient_holds_its_floor():
    train = TrainConfig(kl_coef_step=-0.05, kl_coef_min=0.1)
    assert [kl_at(0.2, train, i) for i in range(1, 6)] == pytest.approx([0.2, 0.15, 0.1, 0.1, 0.1])

    def planned(*settings: str):
        return resolve(build_config(None, {"objective": "pg"}, list(settings)))

    with pytest.raises(ConfigError, match=r"train.kl_coef_min=0.1 is the floor of a KL .* -0.001"):
        planned("train.kl_coef_min=0.1")  # no falling step: the floor would do nothing
    with pytest.raises(ConfigError, match=r"kl_coef_min=0.3 is above train.kl_coef_max=0.2"):
        planned("train.kl_coef_step=-0.01", "train.kl_coef_min=0.3", "train.kl_coef_max=0.2")
    assert planned("train.kl_coef_step=-0.01", "train.kl_coef_min=0.05").train.kl_coef_min == 0.05


def test_apply_sets_the_optimiser_rate_and_the_objective_kl():
    config = build_config(None, {"iterations": 10}, [
        "train.lr_schedule=cosine", "train.kl_coef=0.1", "train.kl_coef_step=0.02"])  # fmt: skip
    optimizer = SimpleNamespace(param_groups=[{"lr": 0.0}, {"lr": 0.0}])
    objective = PolicyGradient(kl_coef=0.1, clip=0.3)
    told = apply_schedules(config, optimizer, objective, 3, 0.1)
    assert told == pytest.approx({"lr": lr_at(config.train, 3, 10), "kl_coef": 0.14})
    assert [g["lr"] for g in optimizer.param_groups] == [told["lr"]] * 2
    assert objective.options.kl_coef == pytest.approx(0.14) and objective.options.clip == 0.3
    unscheduled = build_config(None, {}, [])
    untouched = SimpleNamespace(param_groups=[{"lr": 7.0}])
    apply_schedules(unscheduled, untouched, objective, 3, 0.1)
    assert untouched.param_groups[0]["lr"] == 7.0  # the default run is left exactly as it was


def train(out: Path, name: str, iterations: int, *extra: str) -> list[dict]:
    args = ["run", "--cold-start", "0", "--matches", "2", "--set", "eval.matches=2"]
    args += [
        "--set",
        "threads=1",
        "--set",
        "train.lr_schedule=cosine",
        "--set",
        "train.lr_warmup=1",
    ]
    args += ["--set", "train.kl_coef_step=0.01", "--set", "checkpoint_every=1"]
    threads = torch.get_num_threads()
    try:
        assert main([*args, "--iterations", str(iterations), "--out", str(out), "--name", name,
                     *extra]) == 0  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    with (out / name / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


def test_a_run_logs_its_schedule_and_a_resumed_run_goes_on_with_the_same_values(tmp_path):
    whole = train(tmp_path, "whole", 3)
    config = TrainConfig(lr_schedule="cosine", lr_warmup=1, kl_coef_step=0.01)
    assert [float(r["lr"]) for r in whole] == pytest.approx(
        [lr_at(config, i, 3) for i in (1, 2, 3)]
    )
    assert [float(r["kl_coef"]) for r in whole] == pytest.approx([0.05, 0.06, 0.07])
    first = train(tmp_path, "parts", 3, "--set", "minutes=0.00001")  # stops after iteration 1
    assert len(first) == 1
    for _ in range(2):  # each leg stops after one iteration (its config keeps the time limit)
        assert main(["run", "--resume", str(tmp_path / "parts"), "--iterations", "3"]) == 0
    with (tmp_path / "parts" / "metrics.csv").open() as f:
        parts = list(csv.DictReader(f))
    for key in ("lr", "kl_coef"):
        assert [r[key] for r in parts] == [r[key] for r in whole]


def test_a_new_total_stretches_a_cosine_that_ends_with_the_run_and_says_so():
    train = TrainConfig(lr=1e-3, lr_schedule="cosine", lr_min=1e-4)
    said = stretched(train, 60, 60, 150)
    assert f"iteration 61 trains at {lr_at(train, 61, 150):.3g}" in said
    assert "old curve gave 0.0001" in said and "train.lr_decay_iterations=60" in said
    assert stretched(train, 30, 60, 60) == ""  # the same total: nothing moves
    assert stretched(train.model_copy(update={"lr_decay_iterations": 60}), 60, 60, 150) == ""
    assert stretched(train.model_copy(update={"lr_schedule": "constant"}), 60, 60, 150) == ""


def test_a_resume_to_a_new_total_names_the_climb_and_can_keep_the_old_curve(tmp_path, capsys):
    train(tmp_path, "stretched", 3)  # the cosine reaches lr_min (0) at iteration 3
    kept = shutil.copytree(tmp_path / "stretched", tmp_path / "kept")
    capsys.readouterr()
    assert main(["run", "--resume", str(tmp_path / "stretched"), "--iterations", "5"]) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert "the cosine learning rate now ends at iteration 5, the new total, not at 3" in said
    assert "--set train.lr_decay_iterations=3" in said
    with (tmp_path / "stretched" / "metrics.csv").open() as f:
        rates = [float(row["lr"]) for row in csv.DictReader(f)]
    assert rates[2] == 0.0 and rates[3] > 0.0  # the rate climbs again after the floor
    resume = ["run", "--resume", str(kept), "--iterations", "5"]
    assert main([*resume, "--set", "train.lr_decay_iterations=3"]) == 0
    assert "now ends at" not in capsys.readouterr().err
    with (kept / "metrics.csv").open() as f:
        assert [float(row["lr"]) for row in csv.DictReader(f)][2:] == [0.0, 0.0, 0.0]
