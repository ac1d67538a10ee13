"""The ``move-value`` reward: a move scores what it keeps of the position's exact value."""

from __future__ import annotations

import pytest

from selfplay.api.reward import RewardContext, RewardError
from selfplay.api.types import Episode, Turn
from selfplay.games.kuhn_poker import KuhnPoker
from selfplay.games.tictactoe import TicTacToe
from selfplay.plugins.manager import registries


def episode(game: TicTacToe, moves: list[str]) -> Episode:
    state, turns = game.reset(0), []
    for move in moves:
        role = game.to_act(state)
        turns.append(
            Turn(role=role, seat="learner", text=f"[{move}]", action=move, valid=True, prompt=())
        )
        state = game.step(state, role, f"[{move}]")
    return Episode("tictactoe", 0, {r: "learner" for r in game.roles}, tuple(turns), {})


def reward(game):
    made = registries().rewards.get("move-value")()
    made.bind(RewardContext(game=game))
    return made


def test_a_move_scores_what_it_keeps():
    game = TicTacToe()
    # x centre (keeps the draw), o edge 1 (loses), x corner 0 (keeps the win), o 5, x wins at 8
    scores = reward(game)([episode(game, ["4", "1", "0", "5", "8"])])[0]
    assert scores[0] == 0.0  # the centre keeps the draw
    assert scores[1] == -1.0  # an edge reply turns the draw into a loss
    assert scores[2] == 0.0  # x keeps the win
    assert scores[4] == 0.0  # and takes it
    assert all(score <= 0 for score in scores)


def test_a_won_position_thrown_away_costs_two():
    game = TicTacToe()
    # x: 0, 1 (threatens 2); o: 4, 8. x can win at 2 and plays 7: o blocks at 2 with a fork
    scores = reward(game)([episode(game, ["0", "4", "1", "8", "7"])])[0]
    assert scores[4] == -2.0


def test_an_invalid_attempt_has_no_score():
    game = TicTacToe()
    played = episode(game, ["4"])
    bad = Turn(role="player_1", seat="learner", text="[4]", action=None, valid=False, prompt=())
    played = Episode(played.game, 0, played.seats, (*played.turns, bad), {})
    assert reward(game)([played])[0] == [0.0, None]


def test_a_game_without_exact_values_is_refused():
    with pytest.raises(RewardError, match="kuhn-poker does not give its moves' exact values"):
        reward(KuhnPoker())
