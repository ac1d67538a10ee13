"""Tic-tac-toe rules on concrete positions, and minimax against random play."""

from __future__ import annotations

import pytest

from selfplay.api.game import InvalidMoveRules
from selfplay.games.tictactoe import TicTacToe, TicTacToeState, minimax_value, render
from selfplay.testing import scripted_playout


def play(game: TicTacToe, *moves: int) -> TicTacToeState:
    state = game.reset(0)
    for cell in moves:
        state = game.step(state, game.to_act(state), f"I take [{cell}]")
    return state


def test_x_wins_a_row():
    game = TicTacToe()
    state = play(game, 0, 3, 1, 4, 2)
    assert state.board == "xxxoo...."
    assert game.to_act(state) is None
    assert game.outcome(state) == {"player_0": 1.0, "player_1": -1.0}


def test_o_wins_a_diagonal():
    game = TicTacToe()
    state = play(game, 0, 2, 1, 4, 8, 6)
    assert game.outcome(state) == {"player_0": -1.0, "player_1": 1.0}


def test_full_board_without_a_line_is_a_draw():
    game = TicTacToe()
    state = play(game, 0, 1, 2, 4, 3, 5, 7, 6, 8)
    assert state.board == "xoxxooox" + "x"
    assert game.outcome(state) == {"player_0": 0.0, "player_1": 0.0}


def test_outcome_is_none_while_the_game_runs():
    game = TicTacToe()
    state = play(game, 4)
    assert game.to_act(state) == "player_1"
    assert game.outcome(state) is None


@pytest.mark.parametrize("text", ["[4]", "[9]", "[x]", "4", "", "[-1]"])
def test_illegal_moves_forfeit_under_default_rules(text):
    game = TicTacToe()
    state = play(game, 4)
    after = game.step(state, "player_1", text)
    assert after.forfeit == "player_1"
    assert after.invalid == {"player_1": 1}
    assert after.error
    assert game.outcome(after) == {"player_0": 0.5, "player_1": -1.5}


def test_an_allowance_retry_shows_the_reason():
    game = TicTacToe(rules=InvalidMoveRules(allowance=1))
    state = game.step(play(game, 4), "player_1", "[4]")
    assert state.forfeit is None and state.retries == 1
    assert "already taken" in game.observe(state, "player_1")[-1].content
    state = game.step(state, "player_1", "[0]")
    assert state.board == "o...x...." and state.error is None and state.retries == 0


def test_the_last_answer_span_is_the_action():
    game = TicTacToe()
    state = game.step(game.reset(0), "player_0", "[0]? no, [8]")
    assert state.board == "........x"


def test_prompt_shows_empty_cells_as_digits():
    game = TicTacToe()
    state = play(game, 0, 4)
    assert render(state.board) == "x12|3o5|678"
    assert "x12|3o5|678" in game.observe(state, "player_0")[-1].content


def test_compact_prompt_is_the_board_and_the_mark():
    game = TicTacToe({"compact": True})
    state = play(game, 0, 4)
    assert game.observe(state, "player_0")[-1].content == "x12|3o5|678 x"
    assert game.observe(state, "player_1")[-1].content == "x12|3o5|678 o"


def test_minimax_value_of_the_empty_board_is_a_draw():
    assert minimax_value(".........", "x") == 0


@pytest.mark.parametrize("minimax_role", ["player_0", "player_1"])
def test_minimax_never_loses_to_random(minimax_role):
    game = TicTacToe()
    seats = {r: ("minimax" if r == minimax_role else "random") for r in game.roles}
    results = [scripted_playout(game, seats, seed).outcome[minimax_role] for seed in range(100)]
    assert min(results) >= 0.0
    assert results.count(1.0) > 50  # random play loses most games to perfect play


def test_minimax_against_itself_always_draws():
    game = TicTacToe()
    seats = dict.fromkeys(game.roles, "minimax")
    assert all(scripted_playout(game, seats, s).outcome["player_0"] == 0.0 for s in range(20))
