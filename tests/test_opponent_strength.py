"""The strength dial of scripted players: ``minimax~0.3`` plays a random legal move 3 in 10."""

from __future__ import annotations

import random

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.policy import has_player, scripted_player
from selfplay.core.commands.cli import main
from selfplay.games.tictactoe import MARKS, TicTacToe, minimax_value


def mistakes(name: str, positions: int = 300) -> tuple[int, int]:
    """(moves that give away value, moves played) by ``name`` over random positions."""
    game, rng = TicTacToe(), random.Random(0)
    player = scripted_player(game, name)
    wrong = played = 0
    for seed in range(positions):
        state = game.reset(seed)
        for _ in range(seed % 5):  # a few random moves in
            state = game.step(
                state, game.to_act(state), rng.choice(game.legal_actions(state, game.to_act(state)))
            )
        role = game.to_act(state)
        if role is None:
            continue
        mark, other = MARKS[role], "o" if MARKS[role] == "x" else "x"
        cell = int(player(game, state, role, random.Random(seed)).strip("[]"))
        after = state.board[:cell] + mark + state.board[cell + 1 :]
        wrong += -minimax_value(after, other) < minimax_value(state.board, mark)
        played += 1
    return wrong, played


def test_the_dial_mixes_random_moves_into_the_players():
    assert mistakes("minimax~0")[0] == 0
    random_mistakes, played = mistakes("minimax~1")
    assert random_mistakes > 0.3 * played
    some, _ = mistakes("minimax~0.3")
    assert 0.15 * random_mistakes < some < 0.5 * random_mistakes  # about 0.3 of them


@pytest.mark.parametrize("name", ["minimax~2", "minimax~x", "minimax~-0.1"])
def test_a_bad_dial_is_refused_naming_it(name):
    with pytest.raises(ConfigError, match="from 0 to 1"):
        has_player(TicTacToe(), name)


def test_a_run_trains_against_and_evaluates_a_dialled_player(tmp_path, capsys):
    args = ["run", "--opponent", "fixed:minimax~0.5", "--cold-start", "10", "--matches", "4"]
    args += ["--iterations", "1", "--set", "threads=1", "--set", "eval.matches=2"]
    args += ["--set", "eval.opponents=[minimax~0.5]", "--out", str(tmp_path), "--name", "r"]
    assert main(args) == 0
    assert "minimax~0.5" in (tmp_path / "r" / "summary.txt").read_text()
    assert main([*args[:-1], "bad", "--set", "eval.opponents=[minimax~5]"]) == 2
    assert "minimax~5" in capsys.readouterr().err
