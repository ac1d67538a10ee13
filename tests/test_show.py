"""Judges' raw answers and reward parts travel with each episode; `selfplay show` reads them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from selfplay.api.policy import MockPolicy
from selfplay.api.reward import RewardContext
from selfplay.api.types import Episode, Message, Turn
from selfplay.core.commands.cli import main
from selfplay.core.config import RunConfig
from selfplay.core.reward_pipeline import Component, RewardPipeline, Term
from selfplay.core.run.folder.episode_log import read_episodes, write_episodes
from selfplay.core.run.folder.run_folder import config_text
from selfplay.core.train.records import recorded
from selfplay.games.tictactoe import TicTacToe
from selfplay.rewards.judge import Judge
from selfplay.rewards.outcome import Outcome

ROLES = ("player_0", "player_1")


def match(seed: int, texts=("[4]", "[0]"), outcome=(1.0, -1.0), valid=True, opponent="learner"):
    turns = tuple(
        Turn(role, "learner" if role == "player_0" else opponent,
             (Message("system", "rules"), Message("user", f"Board {seed}. Your move?")),
             text, text.strip("[]") if valid else None, valid,
             None if valid else "no answer in the form [4]", (1,))
        for role, text in zip(ROLES, texts, strict=True)
    )  # fmt: skip
    seats = {"player_0": "learner", "player_1": opponent}
    return Episode("tictactoe", seed, seats, turns, dict(zip(ROLES, outcome, strict=True)))


def pipeline(answers) -> RewardPipeline:
    judge = Judge(scope="turn")
    judge.bind(RewardContext(game=TicTacToe(), policy=lambda *a, **k: MockPolicy(answers)))
    components = [Component(Term("outcome"), Outcome()), Component(Term("judge", 0.5), judge)]
    return RewardPipeline(components, ROLES)


def test_judge_answers_and_reward_parts_are_recorded_with_the_episode(tmp_path):
    episodes = [match(1), match(2)]
    rewards = pipeline(["Score: 8", "no idea", "Score: 2", "Score: 10"])
    scores = rewards(episodes)
    kept = recorded(episodes, episodes, scores, rewards.notes(), iteration=3)
    write_episodes(tmp_path / "episodes.jsonl", kept)
    back = read_episodes(tmp_path / "episodes.jsonl")
    first = back[0].record
    assert first["iteration"] == 3
    assert first["notes"]["judge"] == [
        {"turn": 0, "answer": "Score: 8", "score": 0.8},
        {"turn": 1, "answer": "no idea", "score": None},
    ]
    # each turn's share of each weighted term: the role's outcome, plus 0.5 x the judge's score
    assert first["rewards"]["turns"] == [{"outcome": 1.0, "judge": 0.4}, {"outcome": -1.0}]
    assert first["rewards"]["roles"] == {"player_0": 1.4, "player_1": -1.0}


def test_a_match_the_callbacks_dropped_is_written_without_rewards():
    played = [match(1), match(2)]
    rewards = pipeline(["Score: 5"])
    kept = played[1:]
    out = recorded(played, kept, rewards(kept), rewards.notes(), iteration=1)
    assert "rewards" not in out[0].record and out[1].record["rewards"]["turns"][0]["judge"] == 0.25


@pytest.fixture
def run_dir(tmp_path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.yaml").write_text(config_text(RunConfig(game="tictactoe", matches=2)))
    rewards = pipeline(["Score: 6", "\x1b[2Jgibberish"])
    episodes = [
        match(10),
        match(11, texts=("oops", "[1]"), outcome=(-1.5, 0.5), valid=False),
        match(12, outcome=(0.0, 0.0), opponent="scripted:random"),
    ]
    first, later = episodes[:2], episodes[2:]
    kept = recorded(first, first, rewards(first), rewards.notes(), iteration=1)
    kept += recorded(later, later, rewards(later), rewards.notes(), iteration=2)
    write_episodes(folder / "episodes.jsonl", kept[:2])
    write_episodes(folder / "episodes.jsonl", [match(13)])  # an older line, without a record
    write_episodes(folder / "episodes.jsonl", kept[2:])
    return folder


def shown(capsys, *args: str) -> str:
    assert main(["show", *args, "--all"]) == 0
    return capsys.readouterr().out


def test_show_prints_turns_rewards_and_judge_answers_escaped(run_dir, capsys):
    out = shown(capsys, str(run_dir), "--iteration", "1")
    assert "episode 1 · iteration 1 · tictactoe seed 10" in out
    assert "[user] Board 10. Your move?" in out and "[system] rules" not in out
    assert "reward: outcome +1.000, judge +0.300" in out
    assert "judge on turn 0 (read as 0.6): 'Score: 6'" in out
    assert "judge on turn 1 (unreadable): '\\x1b[2Jgibberish'" in out
    assert "\x1b[2J" not in out  # a model's escape codes never reach the terminal
    assert "seed 12" not in out  # recorded as iteration 2
    assert "[system] rules" in shown(capsys, str(run_dir), "--prompts")


@pytest.mark.parametrize(
    ("args", "seeds"),
    [
        (["--invalid"], [11]),
        (["--outcome", "win"], [10, 13]),
        (["--outcome", "win", "--role", "player_1"], [11]),
        (["--outcome", "draw"], [12]),
        (["--opponent", "random"], [12]),
        (["--unreadable"], [10, 11, 12]),
        (["--iteration", "2-9"], [12, 13]),
    ],
)
def test_show_filters(run_dir, capsys, args, seeds):
    out = shown(capsys, str(run_dir), *args)
    assert [s for s in (10, 11, 12, 13) if f"tictactoe seed {s}\n" in out] == seeds


def test_show_names_bad_input(run_dir, capsys):
    def error() -> str:
        return " ".join(capsys.readouterr().err.split())

    assert main(["show", str(run_dir), "--role", "bishop"]) == 2
    assert "its roles: player_0, player_1" in error()
    assert main(["show", str(run_dir), "--iteration", "5-2"]) == 2
    assert "runs backwards" in error()
    assert main(["show", str(run_dir.parent)]) == 2
    assert "is not a run folder" in error()
    assert main(["show", str(run_dir), "--outcome", "draw", "--iteration", "1"]) == 0
    assert "No match" in capsys.readouterr().out


def learners_match(seed: int, texts=("[4]", "[0]"), outcome=(1.0, -1.0), holders=None):
    holders = holders or {role: f"learner:{role}" for role in ROLES}
    turns = tuple(
        Turn(role, holders[role], (Message("user", f"Board {seed}. Your move, {role}?"),),
             text, text.strip("[]"), True, None, (1,))
        for role, text in zip(ROLES, texts, strict=True)
    )  # fmt: skip
    return Episode("tictactoe", seed, holders, turns, dict(zip(ROLES, outcome, strict=True)))


@pytest.fixture
def learners_run(tmp_path) -> Path:
    folder = tmp_path / "learners"
    folder.mkdir()
    config = RunConfig(game="tictactoe", matches=3, learners={"player_0": {}, "player_1": {}})
    (folder / "config.yaml").write_text(config_text(config))
    write_episodes(
        folder / "episodes.jsonl",
        [
            learners_match(20),
            learners_match(21, outcome=(-1.0, 1.0)),
            learners_match(
                22, holders={"player_0": "learner:player_0", "player_1": "scripted:random"}
            ),
        ],
    )
    return folder


def test_show_reads_one_learner_of_several(learners_run, capsys):
    out = shown(capsys, str(learners_run), "--learner", "player_1")
    assert [s for s in (20, 21, 22) if f"tictactoe seed {s}\n" in out] == [20, 21]
    assert "Your move, player_1?" in out and "Your move, player_0?" not in out
    won = shown(capsys, str(learners_run), "--learner", "player_1", "--outcome", "win")
    assert "seed 21" in won and "seed 20" not in won  # from the learner's side
    assert "seed 22" in shown(
        capsys, str(learners_run), "--learner", "player_0", "--outcome", "win"
    )


def test_show_names_the_learners_when_one_is_wrong(learners_run, run_dir, capsys):
    def error() -> str:
        return " ".join(capsys.readouterr().err.split())

    assert main(["show", str(learners_run), "--learner", "solver"]) == 2
    assert "its learners: player_0, player_1" in error()
    assert main(["show", str(run_dir), "--learner", "player_0"]) == 2
    said = error()
    assert "one shared policy" in said and "drop --learner" in said


def test_a_person_pages_through_matches_in_a_terminal(run_dir):
    pexpect = pytest.importorskip("pexpect")
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "TERM": "xterm", "NO_COLOR": "1"}
    child = pexpect.spawn(
        sys.executable, ["-m", "selfplay.core.commands.cli", "show", str(run_dir)],
        env=env, encoding="utf-8", timeout=60, dimensions=(40, 200),
    )  # fmt: skip
    child.expect(r"match 1 of 4")
    child.expect("q: quit> ")
    child.sendline("")
    child.expect(r"seed 11")
    child.expect(r"match 2 of 4")
    child.sendline("4")
    child.expect(r"seed 12")
    child.sendline("p")
    child.expect(r"seed 13")
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    child = pexpect.spawn(
        sys.executable, ["-m", "selfplay.core.commands.cli", "show", str(run_dir)],
        env=env, encoding="utf-8", timeout=60, dimensions=(40, 200),
    )  # fmt: skip
    child.expect("q: quit> ")
    child.sendeof()  # end of input quits quietly
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


# ---- what `show` reads: the policy's side, damaged lines, what is not a run --------------------


def error_of(capsys) -> str:
    return " ".join(capsys.readouterr().err.split())


@pytest.fixture
def traces_dir(tmp_path) -> Path:
    """The solver suite's traces of a policy that never answers with a move: it loses every
    match, from whichever seat it played."""
    from selfplay.core.commands.suites import HostBench, find_suite, run_suite
    from selfplay.core.commands.traces import TraceWriter

    folder = tmp_path / "traces"
    bench = HostBench(MockPolicy(["I am not sure."]))
    bench.traces = TraceWriter(folder, "solver", "a policy")
    run_suite(find_suite("solver"), bench, [0], 2, "a policy", ["default"])
    return folder


def squashed(text: str) -> str:
    """Without whitespace: a long path wraps on the terminal's width anywhere."""
    return "".join(text.split())


def shown_warned(capsys, *args: str) -> tuple[str, str]:
    assert main(["show", *args, "--all"]) == 0
    said = capsys.readouterr()
    return said.out, squashed(said.err)


def count(out: str, kind: str = "match") -> int:
    return sum(line.startswith(f"{kind} ") for line in out.splitlines())


def test_outcome_in_traces_is_judged_from_the_measured_policys_side(traces_dir, capsys):
    assert count(shown(capsys, str(traces_dir), "--outcome", "loss")) == 4  # both seats
    assert count(shown(capsys, str(traces_dir), "--outcome", "loss", "--opponent", "minimax")) == 2
    assert "No match" in shown(capsys, str(traces_dir), "--outcome", "win")
    assert count(shown(capsys, str(traces_dir), "--outcome", "win", "--role", "player_1")) == 2


def test_outcome_in_a_run_is_judged_from_the_learners_side(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.yaml").write_text(config_text(RunConfig(game="tictactoe", matches=2)))
    lost_second = learners_match(
        31, holders={"player_0": "scripted:minimax", "player_1": "learner"}
    )
    won_first = learners_match(32, holders={"player_0": "learner", "player_1": "scripted:random"})
    write_episodes(folder / "episodes.jsonl", [lost_second, won_first])
    assert "seed 31" in (lost := shown(capsys, str(folder), "--outcome", "loss"))
    assert "seed 32" not in lost
    assert "seed 32" in shown(capsys, str(folder), "--outcome", "win")


def test_a_last_trace_line_cut_short_is_read_past_with_a_warning(traces_dir, capsys):
    file = traces_dir / "solver" / "default.jsonl"
    file.write_text(file.read_text()[:-40])  # the evaluation was killed mid-line
    out, said = shown_warned(capsys, str(traces_dir))
    assert count(out) == 3 and squashed(f"{file}, line 4 is cut short") in said
    out, said = shown_warned(capsys, str(file))
    assert count(out) == 3 and squashed(f"{file}, line 4 is cut short") in said


def test_a_damaged_trace_line_is_refused_naming_its_file_and_line(traces_dir, capsys):
    file = traces_dir / "solver" / "default.jsonl"
    lines = file.read_text().splitlines(keepends=True)
    file.write_text("".join([lines[0], lines[1][:50] + "\n", *lines[2:]]))
    assert main(["show", str(traces_dir), "--all"]) == 2
    said = squashed(error_of(capsys))
    assert squashed(f"{file}, line 2 is not a match trace") in said and "removethatline" in said
    file.write_text("".join([lines[0], '{"format": "open_spiel.match_trace"}\n']))
    assert main(["show", str(file), "--all"]) == 2
    assert "line 2 is not a match trace (KeyError: 'metadata')" in error_of(capsys)


def test_a_run_whose_last_episode_was_cut_short_still_shows(run_dir, capsys):
    log = run_dir / "episodes.jsonl"
    log.write_text(log.read_text()[:-25])
    out, said = shown_warned(capsys, str(run_dir))
    assert count(out, "episode") == 3 and squashed(f"{log}, line 4 is cut short") in said
    log.write_text("{not json\n" + log.read_text())
    assert main(["show", str(run_dir), "--all"]) == 2
    assert squashed(f"{log}, line 1 is not an episode") in squashed(error_of(capsys))


def test_show_reads_a_runs_checkpoint_folder_and_its_episode_log(run_dir, capsys):
    checkpoint = run_dir / "checkpoints" / "iter-000002"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.yaml").write_text((run_dir / "config.yaml").read_text())  # its copy
    assert count(shown(capsys, str(checkpoint)), "episode") == 4
    assert count(shown(capsys, str(run_dir / "episodes.jsonl")), "episode") == 4


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.mkdir(), "is an empty folder: not a run folder (no config.yaml) and holds"),
        (lambda p: None, "does not exist"),
        (lambda p: p.write_text(""), "is a file but not match traces (it is empty)"),
        (
            lambda p: (p.mkdir(), (p / "a.jsonl").write_text("{cut")),
            "no .jsonl file in it is a match trace",
        ),
    ],
)
def test_what_is_neither_a_run_nor_traces_is_named_with_what_show_reads(
    tmp_path, capsys, make, said
):
    path = tmp_path / "thing"
    make(path)
    assert main(["show", str(path)]) == 2
    text = error_of(capsys)
    assert said in text and "`selfplay show` reads a run folder (runs/NAME)" in text
    assert "--traces DIR" in text


def test_learner_on_traces_is_refused_with_a_fix(traces_dir, capsys):
    assert main(["show", str(traces_dir), "--learner", "x"]) == 2
    said = error_of(capsys)
    assert "holds suite match traces of one measured policy" in said and "drop --learner" in said


def test_a_folder_of_runs_names_one_of_them(run_dir, capsys):
    assert main(["show", str(run_dir.parent)]) == 2
    assert squashed(f"pass one of them, e.g. selfplay show {run_dir}") in squashed(error_of(capsys))
