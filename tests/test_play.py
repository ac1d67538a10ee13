"""`selfplay play`: a person at a (pseudo-)terminal against a scripted player or a checkpoint."""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path

import pytest
import torch
from rich.console import Console

from selfplay.api.errors import ConfigError
from selfplay.core.commands.cli import main
from selfplay.core.commands.play import bracketed, load_checkpoint_policy, play_in_terminal
from selfplay.core.models.lora import adapter_state_dict
from selfplay.core.run.folder.checkpoint import CheckpointError
from selfplay.games.tictactoe import TicTacToe

pexpect = pytest.importorskip("pexpect")

# the board as either prompt shows it: "Board 012|345|678. You are x..." or "012|345|678 x"
BOARD = re.compile(r"([0-8xo]{3}\|[0-8xo]{3}\|[0-8xo]{3})")


def train_one_iteration(out: Path, name: str, *extra: str) -> Path:
    args = ["run", "--game", "tictactoe", "--cold-start", "0", "--iterations", "1"]
    args += ["--matches", "4", "--set", "eval.matches=2", "--set", "threads=1"]
    args += ["--out", str(out), "--name", name]
    threads = torch.get_num_threads()
    try:
        assert main([*args, *extra]) == 0
    finally:
        torch.set_num_threads(threads)  # threads=1 is for this run, not for later tests
    return out / name


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    return train_one_iteration(tmp_path_factory.mktemp("play"), "plain")


def spawn_play(*args: str) -> pexpect.spawn:
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "TERM": "dumb", "NO_COLOR": "1"}
    return pexpect.spawn(
        sys.executable,
        ["-m", "selfplay.core.commands.cli", "play", *args],
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 250),
    )


def play_tictactoe(child: pexpect.spawn) -> tuple[str, str]:
    """Type an invalid move first, then the lowest free cell each turn; -> (transcript, result)."""
    typed = 0
    transcript = ""
    while child.expect([r"your move> ", r"Result: [^\r\n]+"]) == 0:
        transcript += child.before
        board = BOARD.findall(child.before)[-1]
        move = "9" if typed == 0 else next(c for c in board if c.isdigit())
        child.sendline(move)
        typed += 1
    transcript += child.before
    result = child.after
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, transcript
    return transcript, result


def test_a_person_plays_a_scripted_player_under_a_pseudo_terminal():
    child = spawn_play("--game", "tictactoe", "--opponent", "scripted:minimax", "--as", "player_0")
    transcript, result = play_tictactoe(child)
    assert "[system] You are playing tic-tac-toe." in transcript  # the prompt, as a model sees it
    assert "[user] Board 012|345|678. You are x. Your move?" in transcript
    assert "Invalid move by you: '[9]': '9' is not a cell number 0-8." in transcript
    assert "[user] Invalid move: '9' is not a cell number 0-8. Try again." in transcript
    assert "scripted:minimax) played" in transcript
    assert re.search(r"Result: (you lose|a draw)\. Payoffs: player_0 [-+]\d", result), result


def test_a_person_plays_a_checkpoint_under_a_pseudo_terminal(run_folder):
    child = spawn_play(str(run_folder), "--as", "player_0")
    transcript, result = play_tictactoe(child)
    assert f"playing against the policy of {run_folder / 'checkpoints' / 'iter-000001'}" in (
        transcript
    )
    assert "Invalid move by you: '[9]'" in transcript
    assert "player_1 (checkpoint iter-000001)" in transcript
    assert re.search(r"Result: .+\. Payoffs: player_0 [-+][\d.]+, player_1 [-+][\d.]+\.", result)


def test_checkpoint_weights_are_loaded(run_folder):
    opponent = load_checkpoint_policy(run_folder)
    saved = torch.load(
        run_folder / "checkpoints" / "iter-000001" / "state.ckpt", weights_only=True
    )["model"]
    loaded = opponent.policy.model.state_dict()
    assert set(loaded) == set(saved)
    assert all(torch.equal(loaded[k], saved[k]) for k in saved)
    assert opponent.config.game == "tictactoe"


def test_lora_checkpoint_loads_its_per_role_adapters(tmp_path):
    folder = train_one_iteration(tmp_path, "lora", "--lora", "--set", "lora.per_role=true")
    checkpoint = folder / "checkpoints" / "iter-000001"
    opponent = load_checkpoint_policy(checkpoint)
    saved = torch.load(checkpoint / "state.ckpt", weights_only=True)["adapters"]
    loaded = adapter_state_dict(opponent.policy.model)
    assert set(loaded) == set(saved) and {k.split("/")[0] for k in saved} == {
        "player_0",
        "player_1",
    }
    assert all(torch.equal(loaded[k], saved[k]) for k in saved)
    assert opponent.policy.role_context is not None
    console = Console(file=io.StringIO(), width=200)
    moves = iter(["9", "4", "0", "1", "2", "3", "5", "6", "7", "8"])
    payoffs = play_in_terminal(
        game_name=None, source=folder, console=console, read=lambda prompt: next(moves)
    )
    shown = console.file.getvalue()
    assert "you played '4'" in shown and "player_1 (checkpoint iter-000001)" in shown
    assert (
        f"Payoffs: player_0 {payoffs['player_0']:+g}, player_1 {payoffs['player_1']:+g}." in shown
    )


def test_a_folder_without_checkpoint_or_config_is_named(tmp_path):
    with pytest.raises(ConfigError, match="neither a run folder"):
        load_checkpoint_policy(tmp_path)
    (tmp_path / "config.yaml").write_text("game: tictactoe\n")
    with pytest.raises(CheckpointError, match="no checkpoint yet"):
        load_checkpoint_policy(tmp_path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Name one opponent"),
        (["--opponent", "scripted:random"], "--game is needed"),
        (["--game", "tictactoe", "--opponent", "random"], "expected scripted:<player>"),
        (["--game", "tictactoe", "--opponent", "scripted:nobody"], "its players are: minimax"),
        (["--game", "tictactoe", "--opponent", "scripted:random", "--as", "x"], "the roles"),
        (["--game", "tictacto", "--opponent", "scripted:random"], "Did you mean 'tictactoe'"),
    ],
)
def test_bad_play_arguments_exit_2_with_a_clear_message(args, message, capsys):
    assert main(["play", *args]) == 2
    assert message in capsys.readouterr().err


def test_a_move_without_brackets_is_wrapped_only_when_that_makes_an_answer():
    game = TicTacToe()
    assert bracketed(game, "4") == "[4]"
    assert bracketed(game, "[4]") == "[4]"
    assert bracketed(game, "a [b] c") == "a [b] c"
    assert bracketed(game, "1\n2") == "1\n2"  # no answer either way: left as typed


def test_end_of_input_in_play_ends_the_match_quietly(monkeypatch, capsys):
    def ended(*args, **kwargs):
        raise EOFError

    monkeypatch.setattr(Console, "input", ended)
    assert main(["play", "--game", "tictactoe", "--opponent", "scripted:random"]) == 0
    out = capsys.readouterr()
    assert "Input ended before the match did: no result." in out.out
    assert "interrupted" not in out.err
