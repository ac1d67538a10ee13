"""Faulty plug-ins: a misspelt hook, a name clash, and games, rewards, verifiers and samplers
whose code raises. Each is one clear line; nothing else breaks, and nothing is lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kit import TINY, column, fails_cleanly, said, selfplay

TYPO = """
from selfplay import Game, hookimpl
from selfplay.games.tictactoe import TicTacToe

class Noughts(TicTacToe):
    name = "noughts"

@hookimpl
def register_gmaes(register):  # the misspelling under test
    register(Noughts)

@hookimpl
def register_games(register):
    register(Noughts)
"""

CLASH = """
from selfplay import hookimpl
from selfplay.games.tictactoe import TicTacToe

class Imposter(TicTacToe):
    description = "registers a name the built-ins already use"

@hookimpl
def register_games(register):
    register(Imposter)
"""


def installed(site: Path, name: str, source: str) -> None:
    """A distribution as pip would leave it: the module and its entry-point metadata."""
    module = name.replace("-", "_")
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[selfplay]\n{name} = {module}\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("site")
    installed(root, "selfplay-plugin-typo", TYPO)
    installed(root, "selfplay-plugin-clash", CLASH)
    return root


def cli(site: Path, *args: str, load: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "SELFPLAY_LOAD_PLUGINS": load}
    env.update(COLUMNS="2000", OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-m", "selfplay.core.commands.cli", *args],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(
    "args", [["--version"], pytest.param(["--help"], marks=pytest.mark.slow), ["games", "--json"]]
)
def test_a_misspelt_hook_is_one_warning_line_and_everything_else_works(site, args):
    out = cli(site, *args, load="selfplay-plugin-typo")
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "register_gmaes" in line]
    assert len(warnings) == 1, out.stderr
    assert "selfplay-plugin-typo 0.1" in warnings[0]
    assert "did you mean 'register_games'" in warnings[0]
    if args[0] == "games":  # the plug-in's correctly spelt hook still registered its game
        assert "noughts" in {game["name"] for game in json.loads(out.stdout)}


def test_a_name_clash_leaves_the_listings_working_and_shows_the_clash(site):
    load = "selfplay-plugin-clash"
    commands = (["--version"], ["games", "--json"], ["plugins", "--json"])
    outs = {args[0]: cli(site, *args, load=load) for args in commands}
    for out in outs.values():
        assert out.returncode == 0, out.stderr
        assert "Two plugins register the game 'tictactoe'" in said(out)
    (row,) = [g for g in json.loads(outs["games"].stdout) if g["name"] == "tictactoe"]
    assert "selfplay-plugin-clash 0.1" in row["clash"]
    rows = {r["name"]: r for r in json.loads(outs["plugins"].stdout)}
    assert any("tictactoe" in w for w in rows["selfplay-plugin-clash"]["warnings"])


def test_only_a_run_that_needs_the_clashing_name_fails(site, tmp_path):
    load = "selfplay-plugin-clash"
    needs = cli(site, "run", "--game", "tictactoe", "--out", str(tmp_path), load=load)
    fails_cleanly(needs, 2, "selfplay.games.tictactoe and selfplay-plugin-clash 0.1")
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_a_run_that_does_not_need_the_clashing_name_trains(site, tmp_path):
    other = ["run", "--game", "rock-paper-scissors", "--iterations", "1", "--matches", "4"]
    other += ["--cold-start", "2", "--set", "eval.matches=2", "--out", str(tmp_path)]
    out = cli(site, *other, load="selfplay-plugin-clash")
    assert out.returncode == 0, out.stderr


FLAKY = ["--game", "test-flaky", "--cold-start", "0", "--matches", "8", "--seed", "11"]
FLAKY += ["--set", "eval.opponents=[]", "--set", "checkpoint_every=1"]


def test_a_raising_game_rule_voids_the_match_and_the_run_goes_on(tmp_path):
    out = selfplay("run", *FLAKY, "--iterations", "2", "--out", str(tmp_path), "--name", "g")
    assert out.returncode == 0, out.stderr
    folder = tmp_path / "g"
    errors = column(folder, "matches/errors")
    played = column(folder, "matches")
    assert sum(int(n) for n in errors.values()) > 0
    assert all(int(played[i]) + int(errors[i]) == 8 for i in (1, 2))
    lines = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    void = [line for line in lines if line.get("void")]
    assert len(void) == sum(int(n) for n in errors.values())
    assert {"game", "seed", "turn", "role", "call", "error"} <= set(void[0])
    assert void[0]["game"] == "test-flaky" and "the flaky rule broke" in void[0]["error"]
    assert "matches voided" in said(out) and f"seed {void[0]['seed']}" in said(out)


def test_a_game_whose_rules_fail_in_most_matches_stops_with_a_message(tmp_path):
    out = selfplay(
        "run", *FLAKY, "--set", "game_options.fail_every=1", "--iterations", "2",
        "--out", str(tmp_path), "--name", "g",
    )  # fmt: skip
    fails_cleanly(out, 2, "8 of 8 matches were voided", "'test-flaky' raised KeyError")
    assert not (tmp_path / "g" / "episodes.jsonl").exists()  # stopped before writing any


def test_a_game_that_raises_during_evaluation_stops_with_a_message(tmp_path):
    args = [*FLAKY[:-4], "--set", "game_options.fail_every=1", "--set", "eval.matches=2"]
    out = selfplay("run", *args, "--iterations", "1", "--out", str(tmp_path))
    fails_cleanly(out, 2, "The game 'test-flaky' raised KeyError", "in observe()")


def test_a_raising_reward_stops_the_run_and_keeps_its_checkpoints(tmp_path):
    out = selfplay(
        "run", *TINY, "--reward", "outcome+test-raise", "--set",
        "reward_options.test-raise.after=1", "--iterations", "3", "--out", str(tmp_path),
        "--name", "r",
    )  # fmt: skip
    fails_cleanly(out, 2, "Reward 'test-raise'", "ValueError: the test reward broke")
    assert "keeps everything up to its last checkpoint, iter-000001" in said(out)
    assert set(column(tmp_path / "r", "loss")) == {1}
    assert (tmp_path / "r" / "checkpoints" / "latest").read_text() == "iter-000001"


def test_a_raising_sampler_stops_the_run_with_a_message(tmp_path):
    args = ["--opponent", "test-raise", "--iterations", "1", "--out", str(tmp_path)]
    out = selfplay("run", *TINY, *args)
    fails_cleanly(out, 2, "Opponent sampler 'test-raise'", "the test sampler broke")


PROCESS = ["--reward", "outcome+process", "--set", "reward_options.process.candidate=text"]


@pytest.mark.slow  # the contract already held: a guard, not a fix
def test_a_verifier_whose_check_raises_gives_error_verdicts_not_a_crash(tmp_path):
    out = selfplay(
        "run", *TINY, *PROCESS, "--set", "reward_options.process.verifier=test-check-raises",
        "--iterations", "1", "--out", str(tmp_path), "--name", "v",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    errors = column(tmp_path / "v", "reward/process/error")
    assert float(errors[1]) == float(column(tmp_path / "v", "reward/process/checked")[1]) > 0


def test_a_verifier_that_raises_through_verify_stops_the_run_naming_it(tmp_path):
    out = selfplay(
        "run", *TINY, *PROCESS, "--set", "reward_options.process.verifier=test-verify-raises",
        "--iterations", "1", "--out", str(tmp_path),
    )  # fmt: skip
    fails_cleanly(out, 2, "Reward 'process'", "the test verifier broke through verify")
