"""Kuhn poker: payoffs of every betting line, the exact Nash value, and what a player sees."""

from __future__ import annotations

from fractions import Fraction
from functools import partial

import pytest

from selfplay.games.kuhn_poker import (
    GAME_VALUE,
    KuhnPoker,
    KuhnPokerState,
    expected_payoffs,
    info_set,
    info_sets,
    legal_moves,
    nash_probabilities,
    payoffs,
)
from selfplay.testing import scripted_playout

LINES = {
    # history: (payoff of player_0 holding the higher card, holding the lower card)
    ("check", "check"): (1.0, -1.0),
    ("bet", "call"): (2.0, -2.0),
    ("bet", "fold"): (1.0, 1.0),
    ("check", "bet", "call"): (2.0, -2.0),
    ("check", "bet", "fold"): (-1.0, -1.0),
}


def play(cards: tuple[str, str], *moves: str) -> tuple[KuhnPoker, KuhnPokerState]:
    game = KuhnPoker()
    state = KuhnPokerState(seed=0, cards=cards)
    for move in moves:
        state = game.step(state, game.to_act(state), f"[{move}]")
        assert state.error is None, state.error
    return game, state


@pytest.mark.parametrize("history", list(LINES))
@pytest.mark.parametrize("cards", [("K", "J"), ("J", "Q")])
def test_every_betting_line_pays_the_right_chips(history, cards):
    game, state = play(cards, *history)
    high, low = LINES[history]
    expected = high if cards[0] == "K" else low
    assert game.to_act(state) is None
    assert game.outcome(state) == {"player_0": expected, "player_1": -expected}
    assert payoffs(cards, history)["player_0"] == expected


def test_the_hand_goes_on_until_a_terminal_line():
    game, state = play(("Q", "K"), "check", "bet")
    assert game.to_act(state) == "player_0"
    assert game.outcome(state) is None


def test_legal_actions_depend_on_the_history():
    assert legal_moves(()) == ("check", "bet")
    assert legal_moves(("check",)) == ("check", "bet")
    assert legal_moves(("bet",)) == ("call", "fold")
    assert legal_moves(("check", "bet")) == ("call", "fold")
    assert legal_moves(("bet", "call")) == ()
    game = KuhnPoker()
    _, state = play(("Q", "K"), "bet")
    assert game.action_of("[check]", state, "player_1")[0] is None
    assert game.action_of("[ CALL ]", state, "player_1") == ("call", None)
    assert game.legal_actions(state, "player_1") == ["[call]", "[fold]"]


@pytest.mark.parametrize("alpha", [Fraction(0), Fraction(1, 6), Fraction(1, 3)])
def test_nash_against_nash_is_worth_minus_one_eighteenth(alpha):
    nash = partial(nash_probabilities, alpha=alpha)
    value = expected_payoffs({"player_0": nash, "player_1": nash})
    assert value == {"player_0": Fraction(-1, 18), "player_1": Fraction(1, 18)}
    assert value["player_0"] == GAME_VALUE


def test_nash_value_with_float_probabilities():
    nash = partial(nash_probabilities, alpha=0.2)
    value = expected_payoffs({"player_0": nash, "player_1": nash})
    assert abs(value["player_0"] - (-1 / 18)) < 1e-12


def test_strategies_are_distributions_over_legal_moves():
    for role, card, history in info_sets():
        probs = nash_probabilities(card, history, role)
        assert set(probs) == set(legal_moves(history))
        assert sum(probs.values()) == 1 and min(probs.values()) >= 0


def test_twelve_information_sets():
    keys = {info_set(card, history) for _, card, history in info_sets()}
    assert len(keys) == 12
    assert len(info_sets("player_0")) == len(info_sets("player_1")) == 6
    assert info_set("K", ("check", "bet")) == "K:check,bet"


def test_sampled_nash_play_matches_the_exact_value():
    game = KuhnPoker()
    seats = dict.fromkeys(game.roles, "nash")
    results = [scripted_playout(game, seats, s).outcome["player_0"] for s in range(4000)]
    assert abs(sum(results) / len(results) - (-1 / 18)) < 0.06


def test_the_private_card_comes_last_and_only_ones_own():
    game = KuhnPoker()
    state = game.step(KuhnPokerState(seed=0, cards=("J", "K")), "player_0", "[check]")
    user = game.observe(state, "player_1")[-1].content
    assert user == "History: check. Legal: [check] [bet]. Your card: K"
    assert "J" not in user
    first = game.observe(KuhnPokerState(seed=0, cards=("J", "K")), "player_0")[-1].content
    assert first == "History: none. Legal: [check] [bet]. Your card: J"


def test_deals_come_from_the_seed():
    game = KuhnPoker()
    assert game.reset(7) == game.reset(7)
    deals = {game.reset(seed).cards for seed in range(100)}
    assert len(deals) == 6


def test_max_turns_cannot_exceed_the_longest_hand():
    with pytest.raises(ValueError):
        KuhnPoker({"max_turns": 4})
