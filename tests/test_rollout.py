"""The rollout engine: lock-step batching per policy, replay from seeds, recorded turns."""

from __future__ import annotations

import collections
import dataclasses
import json
import subprocess
import sys

import pytest

from selfplay.api.game import InvalidMoveRules
from selfplay.api.policy import MockPolicy, Request, ScriptedPolicy
from selfplay.api.types import Message
from selfplay.core.models.tiny import load_tiny_policy
from selfplay.core.rollout import play, seatings_for
from selfplay.core.run.folder.episode_log import read_episodes, write_episodes
from selfplay.games.tictactoe import TicTacToe


def first_legal(req: Request) -> str:
    return req.game.legal_actions(req.state, req.role)[0]


def both(policy):
    return {"player_0": policy, "player_1": policy}


def test_all_matches_end_with_one_call_per_policy_per_tick():
    game, mock = TicTacToe(), MockPolicy(first_legal)
    episodes = play(game, [both(mock)] * 8, list(range(8)))
    # First-legal play: x takes 0, 2, 4, 6 and wins on the diagonal after 7 moves.
    assert mock.calls == [8] * 7
    for episode in episodes:
        assert episode.outcome == {"player_0": 1.0, "player_1": -1.0}
        assert [t.action for t in episode.turns] == ["0", "1", "2", "3", "4", "5", "6"]
        assert all(t.valid and t.reason is None for t in episode.turns)
        assert episode.seats == {"player_0": "mock", "player_1": "mock"}
        assert episode.state["board"] == "xoxoxox.."


def test_mixed_seatings_batch_by_policy_object():
    game = TicTacToe()
    a, b = MockPolicy(first_legal, name="a"), MockPolicy(first_legal, name="b")
    seatings = [both(a)] * 3 + [{"player_0": a, "player_1": b}] * 5
    episodes = play(game, seatings, list(range(8)))
    assert a.calls == [8, 3, 8, 3, 8, 3, 8]  # x moves in every match, o only where a holds o
    assert b.calls == [5, 5, 5]
    assert [e.seats["player_1"] for e in episodes] == ["a"] * 3 + ["b"] * 5
    assert {t.seat for t in episodes[-1].turns} == {"a", "b"}


def test_scripted_matches_replay_from_their_seeds():
    game = TicTacToe()
    seating = {"player_0": ScriptedPolicy("random"), "player_1": ScriptedPolicy("minimax")}
    seeds = list(range(12))
    together = play(game, [seating] * 12, seeds)
    alone = [play(game, [seating], [seed])[0] for seed in reversed(seeds)][::-1]
    assert [e.to_dict() for e in together] == [e.to_dict() for e in alone]
    assert len({e.state["board"] for e in together}) > 1, "different seeds, different games"


def test_invalid_texts_are_recorded_as_invalid_turns():
    game = TicTacToe(rules=InvalidMoveRules(allowance=1, penalty=-2.0, bonus=0.0))
    nonsense = MockPolicy(["no idea", "[9]"])
    (episode,) = play(game, [both(nonsense)], [0])
    assert [(t.valid, t.action) for t in episode.turns] == [(False, None), (False, None)]
    assert "no answer" in episode.turns[0].reason
    assert "not a cell number" in episode.turns[1].reason
    assert episode.outcome == {"player_0": -2.0, "player_1": 0.0}
    assert episode.signals["invalid"] == 2.0
    assert episode.turns[1].prompt[-1].content.startswith("Invalid move:")


def test_a_policy_may_not_drop_requests():
    game = TicTacToe()

    class Forgetful(MockPolicy):
        def act(self, requests, *, greedy=False):
            return super().act(requests[:-1], greedy=greedy)

    with pytest.raises(RuntimeError, match="returned 1 completions for 2 requests"):
        play(game, [both(Forgetful(first_legal))] * 2, [0, 1])


def test_seatings_and_seeds_must_match():
    game, mock = TicTacToe(), MockPolicy(first_legal)
    with pytest.raises(ValueError, match="2 seatings for 3 seeds"):
        play(game, [both(mock)] * 2, [0, 1, 2])
    with pytest.raises(ValueError, match="no policy for role"):
        play(game, [{"player_0": mock}], [0])


def test_seatings_for_rotates_the_learner_over_roles():
    game, learner, opponent = TicTacToe(), MockPolicy(["[0]"]), MockPolicy(["[1]"])
    seatings = seatings_for(game, learner, opponent, 4)
    assert [s["player_0"] is learner for s in seatings] == [True, False, True, False]
    assert all(s["player_1"] is not s["player_0"] for s in seatings)


def test_episodes_round_trip_through_the_log(tmp_path):
    game = TicTacToe()
    episodes = play(game, [both(ScriptedPolicy("random"))] * 3, [5, 6, 7])
    path = tmp_path / "run" / "episodes.jsonl"
    assert write_episodes(path, episodes[:2]) == 2
    write_episodes(path, episodes[2:])
    assert read_episodes(path) == episodes


def test_tiny_model_plays_matches_end_to_end():
    game = TicTacToe(rules=InvalidMoveRules(allowance=2))
    tiny = load_tiny_policy(max_new_tokens=4)
    random_player = ScriptedPolicy("random")
    seatings = [both(tiny)] * 4 + [{"player_0": random_player, "player_1": tiny}] * 4
    episodes = play(game, seatings, list(range(8)))
    assert all(e.outcome is not None for e in episodes)
    model_turns = [t for e in episodes for t in e.turns if t.seat == "tiny"]
    assert model_turns
    for turn in model_turns:
        assert 1 <= len(turn.token_ids) <= 4
        assert len(turn.logprobs) == len(turn.token_ids)
        assert turn.prompt_ids and turn.prompt[0].role == "system"
    again = play(game, seatings, list(range(8)))
    assert [e.to_dict() for e in again] == [e.to_dict() for e in episodes]


def test_the_engine_does_not_import_lightning():
    code = (
        "import sys, selfplay.core.rollout; "
        "sys.exit(any(m.split('.')[0] in ('lightning', 'pytorch_lightning') for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_episode_to_dict_is_what_asdict_gives():
    """Episode.to_dict is built by hand for speed; it must stay dataclasses.asdict's answer."""
    game = TicTacToe(rules=InvalidMoveRules(allowance=2))
    episode = play(game, [both(ScriptedPolicy("random"))], [3])[0]
    point = collections.namedtuple("Point", "x y")
    episode = dataclasses.replace(
        episode,
        state={"board": (1, [2, {"a": (3,)}]), 4: point(1, [5])},
        record={"message": Message("user", "hi"), "ordered": collections.OrderedDict(a=1)},
    )
    expected = dataclasses.asdict(episode)
    expected["turns"] = [turn.to_dict() for turn in episode.turns]
    got = episode.to_dict()
    assert got == expected and list(got) == list(expected)
    assert got["record"]["message"] == {"role": "user", "content": "hi"}
    assert got["state"]["board"][1] is not episode.state["board"][1]  # a copy, not a view
    # to_json dumps without the copy: the same line, byte for byte
    assert episode.to_json() == json.dumps(expected, ensure_ascii=False)
    unicode = dataclasses.replace(episode, extra={"answer": "½ → π", "nested": [point(0, "é")]})
    assert unicode.to_json() == json.dumps(unicode.to_dict(), ensure_ascii=False)
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        dataclasses.replace(episode, extra={"bad": {1}}).to_json()
