"""Rock-paper-scissors: player_1 never sees player_0's pending move; payoffs over rounds."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from selfplay.games.rock_paper_scissors import RockPaperScissors, RockPaperScissorsState


def play(game: RockPaperScissors, *moves: str) -> RockPaperScissorsState:
    state = game.reset(0)
    for move in moves:
        state = game.step(state, game.to_act(state), f"[{move}]")
        assert state.error is None, state.error
    return state


def test_player_1_does_not_see_player_0s_choice():
    game = RockPaperScissors({"rounds": 2})
    seen = set()
    for move in ("rock", "paper", "scissors"):
        state = play(game, "paper", "rock", move)
        assert state.pending == move
        seen.add(tuple(m.content for m in game.observe(state, "player_1")))
    assert len(seen) == 1  # the same prompt whatever player_0 chose


@pytest.mark.parametrize(
    ("first", "second", "payoff"),
    [
        ("rock", "scissors", 1.0),
        ("scissors", "paper", 1.0),
        ("paper", "rock", 1.0),
        ("rock", "paper", -1.0),
        ("paper", "scissors", -1.0),
        ("scissors", "rock", -1.0),
        ("rock", "rock", 0.0),
    ],
)
def test_one_round_payoffs(first, second, payoff):
    game = RockPaperScissors()
    state = play(game, first, second)
    assert game.to_act(state) is None
    assert game.outcome(state) == {"player_0": payoff, "player_1": -payoff}


def test_several_rounds_pay_the_sign_of_the_net_score():
    game = RockPaperScissors({"rounds": 3})
    won_lost_tied = play(game, "rock", "scissors", "rock", "paper", "paper", "paper")
    assert game.outcome(won_lost_tied) == {"player_0": 0.0, "player_1": 0.0}
    two_to_one = play(game, "rock", "scissors", "rock", "paper", "paper", "rock")
    assert game.outcome(two_to_one) == {"player_0": 1.0, "player_1": -1.0}
    unfinished = play(game, "rock", "scissors", "rock")
    assert game.to_act(unfinished) == "player_1" and game.outcome(unfinished) is None


def test_finished_rounds_are_shown_to_both_from_their_side():
    game = RockPaperScissors({"rounds": 2})
    state = play(game, "rock", "paper")
    assert "you rock, opponent paper (lost)" in game.observe(state, "player_0")[-1].content
    assert "you paper, opponent rock (won)" in game.observe(state, "player_1")[-1].content


@pytest.mark.parametrize(
    ("text", "move"), [("[R]", "rock"), ("[p]", "paper"), ("[ Scissors ]", "scissors")]
)
def test_short_and_mixed_case_answers(text, move):
    game = RockPaperScissors()
    assert game.action_of(text, game.reset(0), "player_0") == (move, None)


@pytest.mark.parametrize("text", ["[lizard]", "rock", "[rock paper]", "[]"])
def test_other_answers_are_invalid(text):
    game = RockPaperScissors()
    action, reason = game.action_of(text, game.reset(0), "player_0")
    assert action is None and reason


def test_max_turns_follows_rounds():
    assert RockPaperScissors({"rounds": 3}).options.max_turns == 6
    assert RockPaperScissors({"rounds": 3, "max_turns": 6}).options.max_turns == 6
    with pytest.raises(ValidationError, match="max_turns"):
        RockPaperScissors({"rounds": 3, "max_turns": 5})


def test_rock_player_always_plays_rock():
    game = RockPaperScissors()
    state = game.reset(0)
    assert game.players["rock"](game, state, "player_0", None) == "[rock]"
