"""The pass-rate curriculum and the task schedule (difficulty band, seed injection)."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest
import torch

from selfplay.api.run_view import RunView
from selfplay.api.types import Episode
from selfplay.games.banks import load_bank
from selfplay.games.proposers.curriculum import PassRateCurriculum
from selfplay.games.proposers.task_schedule import TaskSchedule
from selfplay.monitors.task_schedule import TaskScheduleCallback


def test_weights_are_prior_times_one_minus_pass_rate_with_a_floor():
    curriculum = PassRateCurriculum(floor=0.1)
    for _ in range(8):
        curriculum.record("easy", True)  # pass rate (8+1)/(8+2) = 0.9
    curriculum.record("hard", False)  # (0+1)/(1+2) = 1/3
    for _ in range(98):
        curriculum.record("solved", True)  # 99/100: 1 - p = 0.01, floored to 0.1
    weights = curriculum.weights(
        ["easy", "hard", "new", "solved"], {"easy": 2.0, "hard": 1.0, "new": 1.0, "solved": 1.0}
    )
    assert weights == pytest.approx([2.0 * 0.1, 2 / 3, 0.5, 0.1])


def test_unsolved_tasks_are_sampled_more_but_solved_ones_are_not_starved():
    curriculum = PassRateCurriculum(floor=0.05)
    for _ in range(200):
        curriculum.record("solved", True)
        curriculum.record("unsolved", False)
    rng = random.Random(0)
    draws = [curriculum.sample(["solved", "unsolved"], rng) for _ in range(4000)]
    share = draws.count("solved") / len(draws)
    assert 0.02 < share < 0.09  # 0.05 / (0.05 + 0.995) ≈ 0.048


def test_curriculum_state_round_trips_through_json():
    curriculum = PassRateCurriculum(floor=0.2)
    curriculum.record("1", True)
    curriculum.record("2", False)
    again = PassRateCurriculum()
    again.load_state_dict(json.loads(json.dumps(curriculum.state_dict())))
    assert again.weights(["1", "2", "3"]) == curriculum.weights(["1", "2", "3"])
    assert again.floor == 0.2


def test_bad_floor_and_empty_keys_are_refused():
    with pytest.raises(ValueError, match="floor"):
        PassRateCurriculum(floor=0)
    with pytest.raises(ValueError, match="no keys"):
        PassRateCurriculum().sample([], random.Random(0))


def _episodes(solved: int, failed: int, level: int = 1) -> list[Episode]:
    def one(verdict: str) -> Episode:
        state = {"level": level, "final": "5", "verdict": verdict, "void": None}
        return Episode("g", 0, {}, (), {"solver": 0.0}, state=state)

    return [one("pass") for _ in range(solved)] + [one("fail") for _ in range(failed)]


def test_difficulty_rises_above_the_band_falls_below_and_holds_inside():
    schedule = TaskSchedule(load_bank("arithmetic"), difficulty=1.0, inject_every=0)
    schedule.after_iteration(1, _episodes(8, 2))  # solver wins 80%
    assert schedule.difficulty == pytest.approx(1.2)
    schedule.after_iteration(2, _episodes(5, 5))
    assert schedule.difficulty == pytest.approx(1.2)
    schedule.after_iteration(3, _episodes(2, 8))  # 20%
    assert schedule.difficulty == pytest.approx(0.96)


def test_fresh_seeds_join_every_ten_iterations():
    bank = load_bank("arithmetic")  # 160 training problems
    schedule = TaskSchedule(bank, initial_fraction=0.5, inject_every=10, inject_fraction=0.05)
    assert schedule.active == 80
    for iteration in range(1, 10):
        schedule.after_iteration(iteration, [])
    assert schedule.active == 80
    schedule.after_iteration(10, [])
    assert schedule.active == 88  # 5% of 160
    assert {p.id for p in schedule.pool()} < {p.id for p in bank}


def test_the_requested_difficulty_steers_the_seed_level():
    schedule = TaskSchedule(load_bank("arithmetic"), difficulty=3.0, initial_fraction=1.0)
    rng = random.Random(0)
    levels = [schedule.choose(rng).level for _ in range(600)]
    assert levels.count(3) > levels.count(2) > levels.count(1)


def run_view(game, **parts) -> RunView:
    return RunView(config=None, game=game, learner=None, sampler=None, **parts)


def test_the_callback_checkpoints_the_schedule_and_a_resume_reloads_it(tmp_path):
    game = SimpleNamespace(name="g", schedule=TaskSchedule(load_bank("fractions")))
    callback = TaskScheduleCallback()
    callback.on_train_start(run_view(game, folder=tmp_path))
    row: dict = {}
    callback.on_iteration_metrics(run_view(game, iteration=1), _episodes(9, 1), row)
    saved = torch.load(_saved(tmp_path, callback.state_dict()), weights_only=True)
    callback.on_iteration_metrics(run_view(game, iteration=2), _episodes(9, 1), row)
    assert row["task/difficulty"] == pytest.approx(1.44)
    assert not (tmp_path / "task_schedule.jsonl").exists()  # no side file any more
    resumed_game = SimpleNamespace(name="g", schedule=TaskSchedule(load_bank("fractions")))
    resumed = TaskScheduleCallback()
    resumed.load_state_dict(saved)  # the checkpoint was taken after iteration 1
    resumed.on_train_start(run_view(resumed_game, iteration=1, resumed=True))
    assert resumed_game.schedule.difficulty == pytest.approx(1.2)


def test_a_wave_one_run_resumes_its_schedule_from_the_side_file(tmp_path):
    first, later = TaskSchedule(load_bank("fractions")), TaskSchedule(load_bank("fractions"))
    first.difficulty, first.active, later.difficulty = 1.2, 80, 9.0
    states = [first.state_dict(), later.state_dict()]
    lines = [json.dumps({"iteration": i + 1, "state": s}) for i, s in enumerate(states)]
    (tmp_path / "task_schedule.jsonl").write_text("\n".join(lines) + "\n")
    game = SimpleNamespace(name="g", schedule=TaskSchedule(load_bank("fractions")))
    view = run_view(game, folder=tmp_path, iteration=1, resumed=True)
    TaskScheduleCallback().on_train_start(view)
    assert game.schedule.difficulty == pytest.approx(1.2) and game.schedule.active == 80


def test_the_callback_refuses_a_game_without_a_schedule():
    with pytest.raises(ValueError, match="remove the callback"):
        TaskScheduleCallback().on_train_start(run_view(SimpleNamespace(name="tictactoe")))


def _saved(folder, state):
    path = folder / "state.pt"
    torch.save(state, path)
    return path
