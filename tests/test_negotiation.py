"""Negotiation: offer grammar, affordability, trades, and the value-gain verdict."""

from __future__ import annotations

import pytest

from selfplay.games.negotiation import Negotiation, NegotiationState, parse_offer, value

INVENTORIES = {
    "player_0": {"wood": 5, "stone": 1, "grain": 0, "gold": 2},
    "player_1": {"wood": 0, "stone": 4, "grain": 3, "gold": 6},
}
VALUES = {
    "player_0": {"wood": 1, "stone": 2, "grain": 3, "gold": 9},
    "player_1": {"wood": 8, "stone": 2, "grain": 4, "gold": 1},
}


def start(max_turns: int = 10) -> tuple[Negotiation, NegotiationState]:
    game = Negotiation({"max_turns": max_turns})
    state = NegotiationState(seed=0, inventories=INVENTORIES, start=INVENTORIES, values=VALUES)
    return game, state


def play(game: Negotiation, state: NegotiationState, *answers: str) -> NegotiationState:
    for answer in answers:
        state = game.step(state, game.to_act(state), answer)
        assert state.error is None, state.error
    return state


@pytest.mark.parametrize(
    ("text", "give", "get"),
    [
        ("offer 2 wood 1 stone for 3 gold", {"wood": 2, "stone": 1}, {"gold": 3}),
        ("Offer 2 Wood, 1 stones for 3 GOLD", {"wood": 2, "stone": 1}, {"gold": 3}),
        ("offer 10 grain for 1 wood 1 gold", {"grain": 10}, {"wood": 1, "gold": 1}),
    ],
)
def test_offer_grammar(text, give, get):
    assert parse_offer(text) == (give, get)


@pytest.mark.parametrize(
    "text",
    [
        "[offer wood for gold]",
        "[offer 2 wood]",
        "[offer 2 wood for 1 wood]",
        "[offer 0 wood for 1 gold]",
        "[offer -1 wood for 1 gold]",
        "[offer 2 wood 1 wood for 1 gold]",
        "[offer 2 diamonds for 1 gold]",
        "[offer 1 wood for 1 gold for 1 stone]",
        "[give 1 wood for 1 gold]",
        "[offer 1 woodx for 1 gold]",
    ],
)
def test_malformed_offers_are_invalid(text):
    game, state = start()
    action, reason = game.action_of(text, state, "player_0")
    assert action is None and reason


def test_an_offer_the_offerer_cannot_afford_is_invalid():
    game, state = start()
    action, reason = game.action_of("[offer 3 stone for 1 gold]", state, "player_0")
    assert action is None and "cannot give 3 stone" in reason
    canonical = game.action_of("[offer 1 gold 5 wood for 1 stone]", state, "player_0")[0]
    assert canonical == "offer 5 wood 1 gold for 1 stone"


@pytest.mark.parametrize("reply", ["[accept]", "[deny]"])
def test_accept_or_deny_without_a_standing_offer_is_invalid(reply):
    game, state = start()
    action, reason = game.action_of(reply, state, "player_0")
    assert action is None and "no offer" in reason


def test_accepting_an_offer_one_cannot_pay_for_is_invalid():
    game, state = start()
    state = play(game, state, "[offer 1 wood for 1 grain]", "[pass]", "[offer 1 wood for 9 gold]")
    action, reason = game.action_of("[accept]", state, "player_1")
    assert action is None and "9 gold" in reason


def test_an_accepted_offer_executes_the_trade():
    game, state = start()
    state = play(game, state, "[offer 4 wood for 2 grain]", "[accept]")
    assert state.inventories == {
        "player_0": {"wood": 1, "stone": 1, "grain": 2, "gold": 2},
        "player_1": {"wood": 4, "stone": 4, "grain": 1, "gold": 6},
    }
    assert state.trades == 1 and state.offer is None
    assert game.signals(state)["trades"] == 1.0


def test_an_offer_lasts_one_move():
    game, state = start()
    state = play(game, state, "[offer 1 wood for 1 gold]", "[pass]", "[pass]")
    assert game.action_of("[accept]", state, "player_1")[0] is None
    state = play(game, start()[1], "[offer 1 wood for 1 gold]", "[deny]")
    assert state.offer is None


def test_the_larger_value_gain_wins_when_the_moves_run_out():
    game, state = start(max_turns=4)
    # player_0 gains 2*3 - 4*1 = +2; player_1 gains 4*8 - 2*4 = +24.
    state = play(game, state, "[offer 4 wood for 2 grain]", "[accept]", "[pass]")
    assert game.to_act(state) == "player_1" and game.outcome(state) is None
    state = play(game, state, "[pass]")
    assert game.to_act(state) is None
    assert game.outcome(state) == {"player_0": -1.0, "player_1": 1.0}


def test_equal_gains_draw():
    game, state = start(max_turns=2)
    state = play(game, state, "[pass]", "[pass]")
    assert game.outcome(state) == {"player_0": 0.0, "player_1": 0.0}


def test_the_prompt_shows_own_values_last_and_never_the_opponents():
    game, state = start()
    state = play(game, state, "[offer 1 wood for 2 grain]")
    user = game.observe(state, "player_1")[-1].content
    assert user.splitlines()[-1].startswith(
        "Your values per unit: wood 8, stone 2, grain 4, gold 1"
    )
    assert "gold 9" not in user
    assert "you have 0 wood" not in user.lower()  # empty stacks are left out
    assert "Opponent's offer to you: you give 2 grain, you get 1 wood." in user
    assert "5 wood 1 stone 2 gold" in user  # inventories are public
    assert value(INVENTORIES["player_1"], VALUES["player_1"]) == 26


def test_setups_come_from_the_seed():
    game = Negotiation()
    assert game.reset(3) == game.reset(3)
    assert game.reset(3) != game.reset(4)
