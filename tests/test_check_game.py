"""check_game passes on every built-in game and fails, naming the problem, on broken ones."""

from __future__ import annotations

import random
import time
import unicodedata

import pytest

from selfplay.api.game import InvalidMoveRules
from selfplay.api.types import Message
from selfplay.games.kuhn_poker import KuhnPoker
from selfplay.games.negotiation import Negotiation
from selfplay.games.rock_paper_scissors import RockPaperScissors
from selfplay.games.tictactoe import TicTacToe, TicTacToeState
from selfplay.testing import (
    CheckReport,
    check_game,
    fullwidth,
    malformed_corpus,
    random_playout,
)

GAMES = [TicTacToe, KuhnPoker, RockPaperScissors, Negotiation]


@pytest.mark.parametrize("game", GAMES, ids=lambda g: g.name)
def test_builtin_games_pass(game):
    began = time.perf_counter()
    report = check_game(game, matches=500)
    print(report, f"({time.perf_counter() - began:.2f}s)")
    assert isinstance(report, CheckReport) and report.matches == 500
    assert 0 < report.invalid_rate < 0.2  # noise text was mixed in and mostly rejected
    assert sum(report.outcomes["player_0"].values()) == 500


def test_games_with_options_and_rules_pass():
    check_game(RockPaperScissors, matches=200, options={"rounds": 3})
    check_game(Negotiation, matches=100, options={"max_turns": 3})
    report = check_game(TicTacToe(rules=InvalidMoveRules.preset("spiral")), matches=200)
    assert report.forfeits > 0


def test_a_registered_name_resolves():
    assert check_game("kuhn-poker", matches=50).game == "kuhn-poker"


def test_random_playouts_replay_from_their_seed():
    game = Negotiation()
    first, again = (
        random_playout(game, 5, invalid_rate=0.2),
        random_playout(game, 5, invalid_rate=0.2),
    )
    assert first.texts == again.texts and first.snapshots == again.snapshots
    assert random_playout(game, 6).texts != first.texts


def test_the_corpus_holds_the_obviously_malformed_entries():
    assert fullwidth("[4]") == "［４］"
    entries = {e.label: e for e in malformed_corpus("[4]")}
    for label in ("empty", "100k junk without brackets", "fullwidth look-alike", "empty brackets"):
        assert entries[label].expect == "invalid"
    assert len(entries["100k junk without brackets"].text) == 100_000
    assert entries["[invalid] after a legal answer"].ref == "[invalid]"


# ---- deliberately broken games ----------------------------------------------------------------


class RaisesOnJunk(TicTacToe):
    name = "raises-on-junk"

    def legal(self, state, role, action):
        if state.board[int(action)] != ".":  # int() raises ValueError on '[invalid]'
            return super().legal(state, role, action)
        return action


class NotZeroSum(TicTacToe):
    name = "not-zero-sum"

    def result(self, state):
        payoffs = super().result(state)
        return None if payoffs is None else dict.fromkeys(self.roles, 1.0)


class ForgetfulState(TicTacToeState):
    def to_json(self) -> str:
        return self.model_dump_json(exclude={"board"})


class NoRoundTrip(TicTacToe):
    name = "no-round-trip"
    State = ForgetfulState

    def initial(self, seed, rng):
        return ForgetfulState(seed=seed)


class DealsFromTheClock(KuhnPoker):
    name = "deals-from-the-clock"

    def initial(self, seed, rng):
        return super().initial(seed, random.Random(time.perf_counter_ns()))


class NeverEnds(TicTacToe):
    name = "never-ends"

    def to_act(self, state):
        return None if state.forfeit else "player_0"

    def legal(self, state, role, action):
        return action

    def apply(self, state, role, action):
        return state

    def result(self, state):
        return None


class MutatesItsInput(Negotiation):
    name = "mutates-its-input"

    def apply(self, state, role, action):
        state.inventories[role]["wood"] += 1
        return super().apply(state, role, action)


class FoldsLookAlikes(TicTacToe):
    name = "folds-look-alikes"

    def parse(self, text):
        return super().parse(unicodedata.normalize("NFKC", text))


class EndsTooEarly(TicTacToe):
    name = "ends-too-early"

    def result(self, state):
        return dict.fromkeys(self.roles, 0.0)


class OffersTakenCells(TicTacToe):
    name = "offers-taken-cells"

    def legal_actions(self, state, role):
        return [f"[{i}]" for i in range(9)]


class IllegalScriptedPlayer(TicTacToe):
    name = "illegal-scripted-player"
    players = {"stubborn": lambda game, state, role, rng: "[4]"}  # noqa: RUF012


class SilentPrompt(TicTacToe):
    name = "silent-prompt"

    def prompt(self, state, role):
        return [] if state.turn else [Message("user", "go")]


class NoLegalActions(TicTacToe):
    name = "no-legal-actions"

    def legal_actions(self, state, role):
        return []


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        (RaisesOnJunk, "step\\(\\) raised ValueError"),
        (NotZeroSum, "zero-sum"),
        (NoRoundTrip, "round-trip"),
        (DealsFromTheClock, "replays differently"),
        (NeverEnds, "did not end"),
        (MutatesItsInput, "changed the state it was given"),
        (FoldsLookAlikes, "fullwidth"),
        (EndsTooEarly, "outcome\\(\\) is already"),
        (OffersTakenCells, "legal_actions\\(\\) offers"),
        (IllegalScriptedPlayer, "scripted player 'stubborn'"),
        (SilentPrompt, "observe\\(\\)"),
        (NoLegalActions, "legal_actions\\(\\) is empty"),
    ],
    ids=lambda x: x.name if isinstance(x, type) else "",
)
def test_broken_games_fail(broken, problem):
    with pytest.raises(AssertionError, match=problem):
        check_game(broken, matches=100)


# ---- long runs --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("game", GAMES, ids=lambda g: g.name)
def test_ten_thousand_matches(game):
    print(check_game(game, matches=10_000))
