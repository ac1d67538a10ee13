"""Branches: positions rebuilt exactly from seed and texts, played on by the same seat holders."""

from __future__ import annotations

import csv

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.policy import ScriptedPolicy
from selfplay.api.types import Completion, Message
from selfplay.core.config import BranchConfig
from selfplay.core.plan.config_loader import build_config
from selfplay.core.rollout import play
from selfplay.core.run.trainer import train
from selfplay.core.train.branching import is_branch, play_branches, replay
from selfplay.games.kuhn_poker import KuhnPoker
from selfplay.games.tictactoe import TicTacToe


class Sampler(ScriptedPolicy):
    """A trained seat stand-in: random legal moves, some junk first, with token ids."""

    def __init__(self, name: str = "learner") -> None:
        super().__init__("random")
        self.name = name

    def act(self, requests, *, greedy=False):
        out = []
        for request, done in zip(requests, super().act(requests, greedy=greedy), strict=True):
            junk = request.rng.random() < 0.2  # invalid attempts are replayed too
            out.append(Completion(text="[9x]" if junk else done.text, token_ids=(1,)))
        return out


@pytest.mark.parametrize("game", [TicTacToe(), KuhnPoker()], ids=["tictactoe", "kuhn"])
def test_replay_rebuilds_every_position_of_a_match(game):
    learner = Sampler()
    episodes = play(game, [dict.fromkeys(game.roles, learner)] * 6, list(range(6)))
    assert any(not t.valid for ep in episodes for t in ep.turns)  # retries are in the texts
    for episode in episodes:
        for i, turn in enumerate(episode.turns):
            state = replay(game, episode, i)
            assert game.to_act(state) == turn.role
            assert tuple(game.observe(state, turn.role)) == turn.prompt
        assert replay(game, episode, len(episode.turns)).model_dump(mode="json") == episode.state


def test_branches_play_on_from_the_learners_positions_with_the_same_seats():
    game, learner, opponent = TicTacToe(), Sampler(), ScriptedPolicy("random")
    holders = {"learner": learner, opponent.name: opponent}
    seatings = [{"player_0": learner, "player_1": opponent}] * 4
    played = play(game, seatings, [0, 1, 2, 3])
    config = BranchConfig(positions=3, matches=4)
    branches = play_branches(game, played, holders.__getitem__, config, "7")
    assert len(branches) == 12 and all(is_branch(b) for b in branches)
    by_seed = {ep.seed: ep for ep in played}
    for k in range(0, 12, 4):
        group = branches[k : k + 4]
        origin = group[0].extra["branch"]
        source = by_seed[origin["seed"]]
        assert all(b.extra["branch"] == origin for b in group)
        assert source.turns[origin["turn"]].seat == "learner"
        assert {b.turns[0].prompt for b in group} == {source.turns[origin["turn"]].prompt}
        assert all(b.seats == source.seats for b in group)
        assert len({b.seed for b in group}) == 4  # each its own sampling noise
        for branch in group:  # a branch replays from where it branched off, not from its seed
            assert game.start(branch) == replay(game, source, origin["turn"])
            final = replay(game, branch, len(branch.turns)).model_dump(mode="json")
            assert final == branch.state
    again = play_branches(game, played, holders.__getitem__, config, "7")
    assert [b.turns for b in again] == [b.turns for b in branches]  # the draw replays
    other = play_branches(game, played, holders.__getitem__, config, "8")
    assert [b.turns for b in other] != [b.turns for b in branches]
    assert play_branches(game, branches, holders.__getitem__, config, "7") == []
    scripted = play(game, [dict.fromkeys(game.roles, opponent)] * 2, [0, 1])
    assert play_branches(game, scripted, holders.__getitem__, config, "7") == []
    assert play_branches(game, played, holders.__getitem__, BranchConfig(), "7") == []


def test_a_run_trains_on_its_branches_and_logs_only_its_full_matches(tmp_path):
    flags = [
        f"out={tmp_path}", "matches=4", "iterations=1", "cold_start.steps=0", "eval.matches=2",
        "generation.max_new_tokens=4", "branches.matches=3",
    ]  # fmt: skip
    rows = {}
    for positions in (0, 2):
        train(
            build_config(
                None, {}, [*flags, f"name=p{positions}", f"branches.positions={positions}"]
            )
        )
        with (tmp_path / f"p{positions}" / "metrics.csv").open() as f:
            (rows[positions],) = list(csv.DictReader(f))
    plain, branched = rows[0], rows[2]
    assert "branch_matches" not in plain and branched["branch_matches"] == "6"
    for same in ("matches", "learner_turns", "generated_tokens", "mean_reward"):
        assert branched[same] == plain[same]  # the full matches, and only they, are described
    assert int(branched["train_tokens"]) > int(plain["train_tokens"])  # branches are trained on
    episodes = (tmp_path / "p2" / "episodes.jsonl").read_text().splitlines()
    assert len(episodes) == 4 and '"branch"' not in "".join(episodes)


def test_search_targets_walk_a_branch_from_where_it_branched_off(tmp_path):
    """Tic-tac-toe's recipe adds search targets, which walk each match from its start; a branch
    walked from its seed's empty board put the wrong player to move (a ValueError)."""
    flags = [
        f"out={tmp_path}", "matches=4", "iterations=1", "cold_start.steps=0", "eval.matches=2",
        "generation.choice=legal", "objective=legal-pg", "branches.matches=3",
        "train.search_weight=2",
    ]  # fmt: skip
    train(build_config(None, {}, [*flags, "name=b", "branches.positions=2"]))
    with (tmp_path / "b" / "metrics.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    assert row["branch_matches"] == "6" and float(row["search_targets"]) > 0


def test_branch_settings_are_checked():
    with pytest.raises(ConfigError, match=r"branches\.matches"):
        build_config(None, {}, ["branches.matches=1"])
    with pytest.raises(ConfigError, match=r"branches\.positions"):
        build_config(None, {}, ["branches.positions=-1"])


def test_a_game_that_does_not_replay_from_its_seed_is_named():
    from selfplay.api.errors import PluginFault

    class Drifting(TicTacToe):
        name = "drifting"
        calls = 0

        def prompt(self, state, role):
            Drifting.calls += 1  # a prompt that changes from one call to the next
            return [*super().prompt(state, role)[:-1], Message("user", f"call {Drifting.calls}")]

    game, learner = Drifting(), Sampler()
    played = play(game, [dict.fromkeys(game.roles, learner)], [0])
    with pytest.raises(PluginFault, match="'drifting' does not replay from its seed"):
        play_branches(game, played, {"learner": learner}.__getitem__, BranchConfig(positions=1),
                      "0")  # fmt: skip
