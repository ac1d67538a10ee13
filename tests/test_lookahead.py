"""The lookahead opponent: the learner's argmax, checked one move ahead against the rules."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.policy import LookaheadPolicy, MockPolicy, Request
from selfplay.api.sampler import GREEDY_LEARNER, LEARNER, LOOKAHEAD_LEARNER
from selfplay.games.kuhn_poker import KuhnPoker
from selfplay.games.tictactoe import TicTacToe, TicTacToeState
from selfplay.opponents.basic import Latest


def request(board: str, seed: int = 0) -> Request:
    game = TicTacToe()
    state = TicTacToeState(seed=0, board=board)
    role = game.to_act(state)
    return Request(game, state, role, tuple(game.observe(state, role)), random.Random(seed))


@pytest.mark.parametrize(
    ("board", "proposed", "played"),
    [
        ("...xx.oo.", "[8]", "[5]"),  # x wins at 5 rather than block at 8
        ("o...x.o.x", "[1]", "[3]"),  # x must block o's 0-3-6
        ("o...x.o.x", "[3]", "[3]"),  # the block it proposed is kept
        ("....x....", "[0]", "[0]"),  # nothing at stake: the inner policy's move
        ("x.xoo....", "[5]", "[1]"),  # x takes its win at 1 rather than block at 5
        ("oo.xx....", "[2]", "[5]"),  # and at 5 rather than block at 2
    ],
)
def test_it_takes_a_win_blocks_a_loss_and_otherwise_keeps_the_inner_move(board, proposed, played):
    policy = LookaheadPolicy(MockPolicy([proposed], name="learner"))
    assert policy.name == "learner:lookahead"
    assert [c.text for c in policy.act([request(board)])] == [played]


def test_a_lost_position_keeps_the_inner_move_and_a_bad_one_is_replaced_by_a_safe_one():
    # o threatens 2, 7 and 8 at once and x has no win: every move loses, so none is better
    lost = LookaheadPolicy(MockPolicy(["[8]"])).act([request("oo.xoxx..")])
    assert lost[0].text == "[8]"
    safe_moves = {"[3]"}  # x must block o's 0-3-6; a junk proposal is replaced, not kept
    picks = {LookaheadPolicy(MockPolicy(["junk"])).act([request("o...x.o.x", s)])[0].text
             for s in range(5)}  # fmt: skip
    assert picks == safe_moves


def test_latest_seats_the_lookahead_share_and_refuses_what_cannot_work():
    mixed = Counter(
        Latest(greedy=0.25, lookahead=0.25).sample([], random.Random(i)) for i in range(800)
    )
    assert 0.2 < mixed[GREEDY_LEARNER] / 800 < 0.3
    assert 0.2 < mixed[LOOKAHEAD_LEARNER] / 800 < 0.3
    assert 0.45 < mixed[LEARNER] / 800 < 0.55
    with pytest.raises(ConfigError, match="add up to more than 1"):
        Latest(greedy=0.6, lookahead=0.6)
    with pytest.raises(ConfigError, match="kuhn-poker hides information"):
        Latest(lookahead=0.5).check(KuhnPoker())
    Latest(lookahead=0.5).check(TicTacToe())
    with pytest.raises(ValueError, match="hides information"):
        game = KuhnPoker()
        state = game.reset(0)
        role = game.to_act(state)
        req = Request(game, state, role, tuple(game.observe(state, role)), random.Random(0))
        LookaheadPolicy(MockPolicy(["[check]"])).act([req])
