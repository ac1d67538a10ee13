"""The three-seat proposer/solver/judge game (seed 004): every seat plays, the judge is paid for
agreeing with the verifier, calibration items with shipped labels, the judge's agreement as a
task split, and a run that trains all three seats."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from selfplay.api.policy import MockPolicy
from selfplay.core.commands.cli import main
from selfplay.core.evaluate import task_metrics
from selfplay.core.rollout import play
from selfplay.games.proposers.proposer_solver_judge import ProposerSolverJudge

PROPOSAL = "[problem: What is 2 + 3 times 4? answer: 14]"


def match(game, solver, judge, seed=7):
    seating = {
        "proposer": MockPolicy([PROPOSAL]),
        "solver": MockPolicy([solver]),
        "judge": MockPolicy([judge]),
    }
    (episode,) = play(game, [seating], [seed])
    return episode


def test_all_three_seats_play_and_the_judge_is_paid_for_agreeing_with_the_verifier():
    game = ProposerSolverJudge({"calibration": 0})
    right = match(game, "2 + 12 = 14, so [14]", "[correct]")
    assert [t.role for t in right.turns] == ["proposer", "solver", "judge"]
    assert right.outcome == {"proposer": -1.0, "solver": 1.0, "judge": 1.0}
    judge_prompt = right.turns[-1].prompt[-1].content
    assert "2 + 12 = 14, so [14]" in judge_prompt and "answer: 14" not in judge_prompt
    wrong = match(game, "[20]", "[correct]")  # the judge passed a wrong answer
    assert wrong.outcome == {"proposer": 1.0, "solver": -1.0, "judge": 0.0}
    assert wrong.signals["judge_false_pass"] == 1.0 and wrong.signals["judge_agreed"] == 0.0


def test_the_judges_signals_are_logged_in_metrics_csv_as_the_docs_say():
    from selfplay.core.stats import episode_metrics

    game = ProposerSolverJudge({"calibration": 0})
    played = [match(game, "[20]", "[correct]"), match(game, "2 + 12 = 14, so [14]", "[correct]")]
    row = episode_metrics(played, [ep.outcome for ep in played], lambda total: total)
    assert row["signal/judge_false_pass"] == 0.5 and row["signal/judge_agreed"] == 0.5
    assert row["signal/judge_said_correct"] == 1.0
    games_md = (Path(__file__).parent.parent / "docs" / "games.md").read_text()
    for name in ("judge_agreed", "judge_said_correct", "judge_false_pass"):
        assert f"signal/{name}" in games_md and f"signal/{name}" in row


def test_the_judges_score_may_drive_the_solvers_reward_so_shielding_shows():
    game = ProposerSolverJudge({"calibration": 0, "solver_reward": "judge"})
    shielded = match(game, "[20]", "[correct]")
    assert shielded.outcome == {"proposer": -1.0, "solver": 1.0, "judge": 0.0}
    assert shielded.signals["solved"] == 0.0  # the verifier still knows


def test_about_a_tenth_of_matches_are_calibration_items_with_shipped_labels():
    game = ProposerSolverJudge()
    states = [game.reset(seed) for seed in range(600)]
    labelled = [s for s in states if s.label is not None]
    assert 0.06 < len(labelled) / len(states) < 0.14
    item = labelled[0]
    assert item.phase == "judge" and game.current_role(item) == "judge"
    seating = {role: MockPolicy([f"[{item.label}]"]) for role in game.roles}
    (episode,) = play(game, [seating], [item.seed])
    assert [t.role for t in episode.turns] == ["judge"]
    assert episode.outcome == {"proposer": 0.0, "solver": 0.0, "judge": 1.0}


def test_the_judges_agreement_on_held_out_labels_is_a_task_split_measured_every_iteration():
    game = ProposerSolverJudge()
    assert game.iteration_splits == ("judge",)
    agrees = MockPolicy(lambda request: f"[{request.state.label or 'correct'}]")
    contrary = MockPolicy(
        lambda r: "[incorrect]" if (r.state.label or "correct") == "correct" else "[correct]"
    )
    row = task_metrics(game, agrees, limit=20, seed=0, splits=("judge",))
    assert row == {"eval/judge/accuracy": 1.0, "eval/judge/tasks": 20.0, "eval/judge/void": 0.0}
    assert (
        task_metrics(game, contrary, limit=20, seed=0, splits=("judge",))["eval/judge/accuracy"]
        == 0.0
    )


def test_the_run_trains_three_seats_and_logs_elo_and_the_judges_agreement(tmp_path):
    args = ["run", "--game", "proposer-solver-judge", "--iterations", "2", "--matches", "4"]
    args += ["--cold-start", "0", "--set", "generation.max_new_tokens=8"]
    args += ["--set", "eval.matches=2", "--set", "callbacks=[task-schedule]"]
    args += ["--set", "game_options.difficulty_signal=elo", "--set", "game_options.noise=0.5"]
    assert main([*args, "--out", str(tmp_path), "--name", "run"]) == 0
    with (tmp_path / "run" / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    for row in rows:
        assert 0.0 <= float(row["eval/judge/accuracy"]) <= 1.0
        assert float(row["eval/judge/tasks"]) == 2.0
        assert float(row["task/elo/solver"]) + float(row["task/elo/proposer"]) == pytest.approx(
            3000
        )
        assert 0.0 < float(row["task/elo/solver_expects"]) < 1.0
