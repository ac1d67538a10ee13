"""The built-in rewards on hand-made episodes, and `selfplay rewards`."""

from __future__ import annotations

import json

import pytest

from selfplay.api.game import InvalidMoveRules
from selfplay.api.policy import MockPolicy
from selfplay.api.reward import RewardContext, RewardError
from selfplay.api.types import Episode, Message, Turn
from selfplay.core.commands.cli import main
from selfplay.core.rollout import play
from selfplay.games.tictactoe import TicTacToe
from selfplay.plugins.manager import registries
from selfplay.plugins.registry import UnknownName

ROLES = ("player_0", "player_1")


def turn(role, text="[1]", valid=True, tokens=(7, 8)):
    action = text.strip("[]") if valid else None
    return Turn(role, "learner", (Message("user", "move?"),), text, action, valid, None, tokens)


def episode(turns, outcome=None, signals=None, extra=None, seed=0):
    outcome = outcome or {"player_0": 1.0, "player_1": -1.0}
    seats = dict.fromkeys(ROLES, "learner")
    return Episode(
        "tictactoe", seed, seats, tuple(turns), outcome, signals or {}, extra=extra or {}
    )


def make(name, role=None, **options):
    reward = registries().rewards.get(name)(**options)
    reward.role = role
    reward.bind(RewardContext(game=TicTacToe()))
    return reward


def test_outcome_is_the_payoff_or_discounted_per_turn():
    turns = [turn("player_0"), turn("player_1"), turn("player_0"), turn("player_1")]
    ep = episode(turns, outcome={"player_0": 1.0, "player_1": -1.0})
    assert make("outcome")([ep]) == [{"player_0": 1.0, "player_1": -1.0}]
    discounted = make("outcome", discount=0.5)
    assert discounted.per_turn
    assert discounted([ep]) == [[0.5, -0.5, 1.0, -1.0]]


def test_format_penalises_a_missing_answer_but_not_an_illegal_one():
    turns = [
        turn("player_0", "I think...", valid=False),
        turn("player_0", "[9]", valid=False),
        turn("player_1"),
    ]
    ep = episode(turns)
    assert make("format")([ep]) == [[-1.0, 0.0, 0.0]]
    assert make("invalid", penalty=-0.5, bonus=0.1)([ep]) == [[-0.5, -0.5, 0.1]]


def test_format_needs_the_game():
    reward = registries().rewards.get("format")()
    with pytest.raises(RuntimeError, match="'format' reward needs the game"):
        reward([episode([turn("player_0")])])


def test_length_penalises_tokens_beyond_the_allowance():
    turns = [turn("player_0", tokens=tuple(range(30))), turn("player_1", tokens=(1,))]
    scripted = turn("player_0", tokens=())
    reward = make("length", free=10, per=10, cap=1.5)
    assert reward([episode([*turns, scripted])]) == [[-1.5, 0.0, None]]
    by_chars = make("length", unit="chars", per=2)
    assert by_chars([episode([turn("player_0", "[1]")])]) == [[-1.0]]


def test_game_signal_is_linear_in_the_signals_and_checks_names():
    eps = [
        episode([turn("player_0")], signals={"turns": 4.0, "invalid": 1.0}),
        episode([turn("player_0")], signals={"turns": 2.0}),
    ]
    reward = make("game-signal", coefficients={"turns": -0.5, "invalid": -1.0}, bias=3.0)
    assert reward(eps) == [dict.fromkeys(ROLES, 3.0 - 2.0 - 1.0), dict.fromkeys(ROLES, None)]
    assert reward.counters() == {"missing": 1.0}
    with pytest.raises(RewardError, match="reports no signal hints; its signals are: invalid"):
        make("game-signal", coefficients={"hints": 1.0})(eps)
    with pytest.raises(ValueError, match="give at least one coefficient"):
        make("game-signal")


def test_novelty_penalises_repeats_and_its_history_round_trips():
    first = episode([turn("player_0", "what is two plus two"), turn("player_1", "four")])
    again = episode([turn("player_0", "what is two plus two"), turn("player_1", "five")])
    new = episode([turn("player_0", "name a prime above ten"), turn("player_1", "eleven")])
    reward = make("novelty", role="player_0", n=2, threshold=0.5)
    assert reward([first]) == [[0.0, None]]
    state = reward.state_dict()
    assert json.loads(json.dumps(state)) == state
    assert reward([again, new]) == [[-1.0, None], [0.0, None]]
    restored = make("novelty", role="player_0", n=2, threshold=0.5)
    restored.load_state_dict(state)
    assert restored([again]) == [[-1.0, None]]
    fresh = make("novelty", role="player_0", n=2, threshold=0.5)
    assert fresh([again]) == [[0.0, None]]


def test_novelty_history_is_bounded():
    reward = make("novelty", history=2, threshold=0.5)
    texts = ["alpha beta gamma", "delta epsilon zeta", "eta theta iota", "alpha beta gamma"]
    scores = reward([episode([turn("player_0", t)]) for t in texts])
    assert scores[-1] == [0.0]  # the first text has left the history
    assert len(reward.state_dict()["history"]) == 2


class FakeVerifier:
    """Passes "4", fails "5", times out on "slow", breaks on anything else."""

    def __init__(self, **options):
        self.options = options

    def verify(self, candidate, reference, **ctx):
        from types import SimpleNamespace

        status = {reference: "pass", "5": "fail", "slow": "timeout"}.get(candidate, "error")
        return SimpleNamespace(status=status)


def test_process_scores_each_turn_with_a_verifier_and_masks_errors():
    registries().verifiers.add("fake", FakeVerifier, "tests")
    turns = [
        turn("player_0", "[4]"),
        turn("player_1", "[5]"),
        turn("player_0", "[slow]"),
        turn("player_1", "[boom]"),
        turn("player_0", "gibberish", valid=False),
    ]
    ep = episode(turns, extra={"answer": 4})
    reward = make("process", verifier="fake", reference="answer", failed=-1.0)
    assert reward([ep]) == [[1.0, -1.0, -1.0, None, -1.0]]
    assert reward.counters() == {"checked": 4.0, "error": 1.0}
    only_p0 = make("process", role="player_0", verifier="fake", reference="answer")
    assert only_p0([ep]) == [[1.0, None, 0.0, None, 0.0]]
    with pytest.raises(RewardError, match="has no 'solution' in its extra \\(answer\\)"):
        make("process", verifier="fake", reference="solution")([ep])


def test_process_with_the_rules_verifier_replays_each_turn_state():
    game = TicTacToe(rules=InvalidMoveRules(allowance=1))
    texts = MockPolicy(["[4]", "[4]", "[0]"])  # the second "[4]" takes an occupied cell
    (ep,) = play(game, [dict.fromkeys(ROLES, texts)], [0])
    assert [t.valid for t in ep.turns] == [True, False, True, False, False]
    reward = registries().rewards.get("process")(verifier="rules", candidate="text", failed=-1.0)
    reward.bind(RewardContext(game=game))
    assert reward([ep]) == [[1.0, -1.0, 1.0, -1.0, -1.0]]
    assert reward.counters() == {"checked": 5.0, "error": 0.0}


def test_process_names_unknown_verifiers_and_needs_one():
    with pytest.raises(UnknownName, match="Unknown verifier 'nope'"):
        make("process", verifier="nope")
    with pytest.raises(ValueError, match="verifier"):
        make("process")


def test_rewards_command_lists_rewards_with_options(capsys):
    assert main(["rewards", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    expected = {"outcome", "format", "invalid", "process", "game-signal", "length", "novelty"}
    assert expected | {"judge", "quality"} <= set(rows)
    assert rows["judge"]["options"]["model"]["default"] == "reference"
    assert rows["process"]["options"]["verifier"]["required"] is True
    assert rows["length"]["description"].startswith("Penalises long turns")
    assert main(["rewards"]) == 0
    assert "game-signal" in capsys.readouterr().out
