"""The training monitors: diversity of the learner's texts and the reward-hacking monitor."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.api.run_view import RunView
from selfplay.api.types import Episode, Turn
from selfplay.core.commands.cli import main
from selfplay.core.config import RunConfig
from selfplay.core.plan.build import build_callbacks
from selfplay.monitors.diversity import DiversityMonitor, distinct_n, duplicate_rate
from selfplay.monitors.hacking_monitor import HackingMonitor, fitted_change
from selfplay.monitors.trajectory_filter import TrajectoryFilter


def episode(*turns: tuple[str, str, str]) -> Episode:
    made = tuple(Turn(role, seat, (), text, text, True) for role, seat, text in turns)
    return Episode("g", 0, {"a": "learner", "b": "learner"}, made, {"a": 0.0, "b": 0.0})


# ---- diversity ---------------------------------------------------------------------------


def test_distinct_n_and_duplicate_rate_on_known_texts():
    texts = ["the cat sat", "the cat ran", "the cat sat"]
    assert distinct_n(texts, 1) == pytest.approx(4 / 9)  # the, cat, sat, ran
    assert distinct_n(texts, 2) == pytest.approx(3 / 6)  # the cat, cat sat, cat ran
    assert duplicate_rate(texts) == pytest.approx(1 / 3)
    assert distinct_n(["4", "4", "5"], 2) == pytest.approx(2 / 3)  # short texts are one gram
    assert distinct_n([], 1) == 0.0 and duplicate_rate([]) == 0.0


def test_diversity_measures_the_first_role_and_only_the_learners_turns():
    monitor = DiversityMonitor()
    monitor.on_train_start(run_view(game=SimpleNamespace(roles=("a", "b"))))
    episodes = [
        episode(("a", "learner", "x y"), ("b", "learner", "z")),
        episode(("a", "learner", "x y"), ("a", "scripted:random", "q w")),
    ]
    row: dict = {}
    monitor.on_iteration_metrics(run_view(iteration=1), episodes, row)
    assert row == {
        "diversity/a/distinct_1": pytest.approx(2 / 4),
        "diversity/a/distinct_2": pytest.approx(1 / 2),
        "diversity/a/duplicate_rate": pytest.approx(1 / 2),
    }


def test_diversity_role_all_and_a_bad_role():
    every = DiversityMonitor(role="all")
    assert every.resolve_roles(("a", "b")) == ("a", "b")
    with pytest.raises(ConfigError, match=r"'c'.*roles are a, b"):
        DiversityMonitor(role="c").resolve_roles(("a", "b"))


def test_callback_options_are_checked():
    with pytest.raises(ConfigError, match="diversity has no option 'rolle'; its options are: role"):
        build_callbacks(
            RunConfig(callbacks=["diversity"], callback_options={"diversity": {"rolle": "a"}})
        )
    with pytest.raises(ConfigError, match="'hacking-monitor', which is not in callbacks"):
        build_callbacks(RunConfig(callback_options={"hacking-monitor": {"window": 3}}))
    with pytest.raises(ConfigError, match="window"):
        build_callbacks(
            RunConfig(
                callbacks=["hacking-monitor"], callback_options={"hacking-monitor": {"window": 1}}
            )
        )


def test_a_tiny_run_logs_the_monitor_columns(tmp_path):
    args = [
        "run", "--game", "tictactoe", "--cold-start", "0", "--iterations", "2", "--matches", "4",
        "--set", "eval.matches=2", "--set", "eval.every=1", "--seed", "1",
        "--set", "callbacks=[diversity,hacking-monitor]",
        "--set", "callback_options.hacking-monitor.metric=eval/random/win_rate",
        "--out", str(tmp_path), "--name", "d",
    ]  # fmt: skip
    assert main(args) == 0
    with (tmp_path / "d" / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    for row in rows:
        for column in ("distinct_1", "distinct_2", "duplicate_rate"):
            assert 0.0 <= float(row[f"diversity/player_0/{column}"]) <= 1.0
        assert row["monitor/hacking"] == "0.0"  # a window of 5 evaluations is not full yet


def run_view(**parts) -> RunView:
    """A RunView with stand-ins for what a test does not use."""
    fields = {"config": None, "game": SimpleNamespace(roles=()), "learner": None, "sampler": None}
    return RunView(**{**fields, **parts})


# ---- hacking monitor ---------------------------------------------------------------------


def fake_trainer() -> SimpleNamespace:
    """A learner's model, its optimiser, and the run view a callback would get."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    view = run_view(
        learner=SimpleNamespace(model=model), reset_optimizer=lambda: optimizer.state.clear()
    )
    return SimpleNamespace(model=model, optimizer=optimizer, view=view)


def feed(monitor: HackingMonitor, trainer, rows: list[dict]) -> list[dict]:
    view = trainer.view if trainer is not None else run_view()
    for iteration, row in enumerate(rows, start=1):
        monitor.on_iteration_metrics(view.at(iteration), [], row)
    return rows


def evaluations(rewards: list[float], accuracies: list[float]) -> list[dict]:
    return [
        {"mean_reward": r, "eval/held_out/accuracy": a}
        for r, a in zip(rewards, accuracies, strict=True)
    ]


def test_fitted_change_is_the_least_squares_change_across_the_window():
    assert fitted_change([0.0, 1.0, 2.0, 3.0]) == pytest.approx(3.0)
    assert fitted_change([1.0, 0.0, 1.0, 0.0]) == pytest.approx(-0.6)
    assert fitted_change([5.0]) == 0.0


def test_fires_when_reward_rises_while_accuracy_falls(caplog):
    monitor = HackingMonitor()
    rows = feed(monitor, None, evaluations([0.1, 0.2, 0.3, 0.4, 0.5], [0.6, 0.55, 0.5, 0.45, 0.4]))
    assert [row["monitor/hacking"] for row in rows] == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert monitor.fired == [5]
    assert "possible reward hacking" in caplog.text


def test_silent_when_both_rise_or_before_the_window_fills():
    both_rise = HackingMonitor()
    rows = feed(both_rise, None, evaluations([0.1, 0.2, 0.3, 0.4, 0.5], [0.4, 0.45, 0.5, 0.5, 0.6]))
    assert both_rise.fired == [] and rows[-1]["monitor/hacking"] == 0.0
    short = HackingMonitor(window=5)
    feed(short, None, evaluations([0.1, 0.2, 0.3, 0.4], [0.6, 0.5, 0.4, 0.3]))
    assert short.fired == []


def test_thresholds_and_a_custom_metric():
    monitor = HackingMonitor(metric="eval/win_rate", window=3, min_drop=0.2)
    rows = [{"mean_reward": r, "eval/win_rate": a} for r, a in [(0, 0.5), (1, 0.45), (2, 0.4)]]
    feed(monitor, None, rows)
    assert monitor.fired == []  # fell by 0.1, less than min_drop
    feed(monitor, None, [{"mean_reward": 3.0, "eval/win_rate": 0.1}])
    assert monitor.fired == [1]  # iteration numbers restart with each feed


def test_reward_between_evaluations_is_averaged():
    monitor = HackingMonitor(window=2)
    rows = [
        {"mean_reward": 0.0, "eval/held_out/accuracy": 0.5},
        {"mean_reward": -5.0},  # mean of the two rows since the last evaluation: 0.0 < ...
        {"mean_reward": 5.2, "eval/held_out/accuracy": 0.4},  # ... 0.1 here
    ]
    feed(monitor, None, rows)
    assert monitor.points == [(0.0, 0.5), (pytest.approx(0.1), 0.4)]
    assert monitor.fired == [3] and "monitor/hacking" not in rows[1]


def test_a_missing_reward_column_is_named():
    with pytest.raises(ConfigError, match="no reward column 'score'"):
        feed(HackingMonitor(reward="score"), None, [{"mean_reward": 1.0}])


def test_rollback_restores_the_best_weights_and_clears_the_optimiser():
    trainer = fake_trainer()
    model = trainer.model
    monitor = HackingMonitor(window=3, rollback=True)
    feed(monitor, trainer, evaluations([0.0], [0.9]))  # best so far: these weights
    best = {k: v.clone() for k, v in model.state_dict().items()}
    model(torch.ones(1, 3)).sum().backward()
    trainer.optimizer.step()
    rows = [
        {"mean_reward": 0.5, "eval/held_out/accuracy": 0.7},
        {"mean_reward": 1.0, "eval/held_out/accuracy": 0.5},
    ]
    for iteration, row in enumerate(rows, start=2):
        assert not torch.equal(model.weight, best["weight"])
        monitor.on_iteration_metrics(trainer.view.at(iteration), [], row)
    assert rows[-1]["monitor/hacking"] == 1.0 and rows[-1]["monitor/rolled_back_to"] == 1
    for key, value in model.state_dict().items():
        assert torch.equal(value, best[key])
    assert not trainer.optimizer.state
    assert monitor.points == []  # a fresh window after the rollback


def test_without_rollback_no_weights_are_kept():
    trainer = fake_trainer()
    monitor = HackingMonitor(window=2)
    feed(monitor, trainer, evaluations([0.0, 1.0], [0.9, 0.1]))
    assert monitor.fired == [2] and monitor.best is not None and monitor.best.parameters is None


# ---- trajectory filter -------------------------------------------------------------------


def test_the_filter_drops_matches_whose_learner_texts_are_blocked():
    screen = TrajectoryFilter(patterns=[r"rm\s+-rf"], blocklist=["PASSWORD"])
    clean = episode(("a", "learner", "[4]"), ("b", "learner", "[5]"))
    shell = episode(("a", "learner", "run rm  -rf / now"), ("b", "learner", "[5]"))
    secret = episode(("a", "learner", "[4]"), ("b", "learner", "my password is"))
    scripted = episode(("a", "scripted:random", "password"), ("b", "learner", "[5]"))
    kept = screen.on_episodes(run_view(), [clean, shell, secret, scripted])
    assert kept == [clean, scripted]  # a scripted player's text is not the learner's
    row: dict = {}
    screen.on_iteration_metrics(run_view(), [clean, shell, secret, scripted], row)
    assert row == {"filter/dropped": 2.0, "filter/dropped_total": 2.0}
    resumed = TrajectoryFilter(blocklist=["x"])
    resumed.load_state_dict(screen.state_dict())
    assert resumed.total == 2


def test_the_filter_screens_only_the_roles_asked_for():
    screen = TrajectoryFilter(blocklist=["bad"], roles=["b"])
    assert screen.on_episodes(run_view(), [episode(("a", "learner", "bad"))]) != []
    assert screen.on_episodes(run_view(), [episode(("b", "learner", "bad"))]) == []


def test_a_pattern_that_is_no_regular_expression_is_a_config_error():
    with pytest.raises(ConfigError, match=r"callback_options.trajectory-filter.patterns.*'\('"):
        TrajectoryFilter(patterns=["("])
