"""judged-solver: the contract, the verdict arithmetic, the calibration split, tasks, a run."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import pytest

from selfplay.api.policy import MockPolicy
from selfplay.api.reward import RewardContext
from selfplay.api.tasks import TaskGame
from selfplay.api.verifier import Verdict
from selfplay.core.evaluate import task_metrics
from selfplay.core.plan.build import build_reward
from selfplay.core.plan.config_loader import build_config
from selfplay.games.judged_solver import CALIBRATION, JudgedSolver
from selfplay.games.text_game import load_bank as load_records
from selfplay.testing import check_game

ORDINARY = {"calibration": 0.0}


def finished(game, seed, *texts):
    state = game.reset(seed)
    for text in texts:
        state = game.step(state, game.to_act(state), text)
    assert game.to_act(state) is None
    return state


def verdict_scores(game, states):
    """The game's default reward on episodes ending in ``states`` (one turn per verdict)."""
    from selfplay.api.types import Episode, Message, Turn

    reward = build_reward(build_config(flags={"game": "judged-solver"}), game)
    reward.bind(RewardContext(game=game))
    episodes = [
        Episode(
            game.name,
            state.seed,
            dict.fromkeys(game.roles, "learner"),
            tuple(
                Turn(role, "learner", (Message("user", "?"),), "", None, True)
                for role in (["solver"] if state.label is None else []) + ["judge"]
            ),
            game.outcome(state),
            state=state.model_dump(mode="json"),
        )
        for state in states
    ]
    return [scores.turns for scores in reward(episodes)], reward


def test_judged_solver_keeps_the_contract():
    check_game(JudgedSolver, matches=150)
    check_game(JudgedSolver, matches=40, options={"calibration": 1.0})


def test_the_solver_is_paid_for_correctness_and_the_judge_for_agreeing_with_the_verifier():
    game = JudgedSolver(ORDINARY)
    answer = game.reset(4).answer
    right_trusted = finished(game, 4, f"so it is [{answer}]", "[correct]")
    wrong_trusted = finished(game, 4, "[0.123]", "[Correct]")
    wrong_caught = finished(game, 4, "[0.123]", "[incorrect]")
    right_doubted = finished(game, 4, f"[{answer}]", "[incorrect]")
    assert right_trusted.verdicts == ("pass", "pass") and wrong_trusted.verdicts == ("fail", "fail")
    assert game.outcome(wrong_caught) == {"solver": 0.0, "judge": 1.0}
    assert game.outcome(right_doubted) == {"solver": 1.0, "judge": 0.0}
    states = [right_trusted, wrong_trusted, wrong_caught, right_doubted]
    turns, reward = verdict_scores(game, states)
    assert turns == [(1.0, 1.0), (0.0, 0.0), (0.0, 1.0), (1.0, 0.0)]
    assert reward.metrics()["reward/verdict/judge"] == 0.5
    asked = game.observe(game.step(game.reset(4), "solver", "so it is [0.123]"), "judge")
    assert "A solver answered: so it is [0.123]" in asked[-1].content
    assert game.reset(4).problem in asked[-1].content  # the reference answer is never shown
    assert (
        f"[{answer}]" not in asked[-1].content and game.reset(4).solution not in asked[-1].content
    )


def test_on_a_calibration_match_the_judge_answers_to_the_human_label():
    game = JudgedSolver({"calibration": 1.0})
    start = game.reset(0)
    assert game.to_act(start) == "judge" and start.label in ("correct", "incorrect")
    agreeing = game.step(start, "judge", f"[{start.label}]")
    other = "incorrect" if start.label == "correct" else "correct"
    disagreeing = game.step(start, "judge", f"[{other}]")
    assert game.outcome(agreeing) == {"solver": 0.0, "judge": 1.0}
    turns, _ = verdict_scores(game, [agreeing, disagreeing])
    assert turns == [(1.0,), (0.0,)]  # one turn: the judge's


class Undecided:
    def verify(self, candidate, reference, **ctx):
        return Verdict("timeout", "too slow")


def test_a_void_verifier_verdict_masks_the_judges_turn():
    game = JudgedSolver(ORDINARY, verifiers=lambda name, options: Undecided())
    state = finished(game, 2, "[7]", "[correct]")
    assert state.verdicts == ("timeout", "error")
    turns, reward = verdict_scores(game, [state])
    assert turns == [(0.0, None)] and reward.metrics()["reward/verdict/error"] == 1.0


def test_the_calibration_set_and_its_split():
    train, held = load_records(CALIBRATION, "train"), load_records(CALIBRATION, "heldout")
    assert (len(train), len(held)) == (40, 20)
    assert not {r["id"] for r in train} & {r["id"] for r in held}
    for split in (train, held):
        labels = {r["label"] for r in split}
        kinds = {r["kind"] for r in split}
        assert labels == {"correct", "incorrect"} and kinds == {"right", "wrong", "unusual"}
    game = JudgedSolver(ORDINARY)
    for record in (*train, *held):  # the plainly written labels agree with the verifier
        if record["kind"] != "unusual":
            span = game.parse(record["candidate"])
            passed = game.verify(span, record["answer"]) == "pass"
            assert passed == (record["label"] == "correct"), record["id"]


def test_about_a_tenth_of_matches_are_calibration_matches_drawn_by_seed():
    game = JudgedSolver()
    starts = [game.reset(seed) for seed in range(1000)]
    calibrated = [s for s in starts if s.label is not None]
    assert 0.07 <= len(calibrated) / 1000 <= 0.13
    train_ids = {r["id"] for r in load_records(CALIBRATION, "train")}
    assert {s.item_id for s in calibrated} <= train_ids  # held-out items are never trained on
    assert [JudgedSolver().reset(s).item_id for s in range(50)] == [s.item_id for s in starts[:50]]
    assert all(s.item_id not in train_ids for s in starts if s.label is None)


def test_the_judge_is_the_task_role_on_held_out_labelled_items():
    game = JudgedSolver()
    assert isinstance(game, TaskGame) and game.task_role == "judge"
    states = game.task_states("held_out", 50, seed=1)
    held_ids = {r["id"] for r in load_records(CALIBRATION, "heldout")}
    assert {s.item_id for s in states} == held_ids and game.task_states("transfer", 5, 1) == []
    assert [s.item_id for s in game.task_states("held_out", 5, 1)] == [
        s.item_id for s in states[:5]
    ]
    knows = MockPolicy(lambda request: f"[{request.state.label}]")
    metrics = task_metrics(game, knows, limit=20, seed=1)
    assert metrics["eval/held_out/accuracy"] == 1.0 and metrics["eval/held_out/tasks"] == 20
    credulous = task_metrics(game, MockPolicy(["[correct]"]), limit=20, seed=1)
    share = sum(s.label == "correct" for s in states) / len(states)
    assert credulous["eval/held_out/accuracy"] == pytest.approx(share)


def test_a_one_iteration_run_logs_the_judges_held_out_agreement(tmp_path):
    args = ["run", "--game", "judged-solver", "--cold-start", "5", "--matches", "4"]
    args += ["--iterations", "1", "--set", "eval.matches=4", "--set", "eval.every=1"]
    args += ["--set", "cold_start.batch_size=16", "--out", str(tmp_path), "--name", "r"]
    code = "import sys; from selfplay.core.commands.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    with (tmp_path / "r" / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    logged = [r["eval/held_out/accuracy"] for r in rows if r.get("eval/held_out/accuracy")]
    assert logged and all(0.0 <= float(value) <= 1.0 for value in logged)
    assert (tmp_path / "r" / "episodes.jsonl").read_text().count('"judged-solver"') == 4
