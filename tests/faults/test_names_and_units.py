"""Every name is checked before any work; and the pieces the fault handling is made of."""

from __future__ import annotations

import time

import pytest

from selfplay.api.errors import PluginFault
from selfplay.api.types import Episode
from selfplay.core.commands.cli import main
from selfplay.core.rollout import VoidMatch, play
from selfplay.core.run.folder import checkpoint
from selfplay.core.stats import role_outcomes
from selfplay.games.tictactoe import TicTacToe
from selfplay.plugins.registry import PluginError, Registry

BAD_NAMES = [
    (["--game", "tictactoo"], "Unknown game 'tictactoo'"),
    (["--model", "tinyy"], "--model 'tinyy' is neither"),
    (["--reward", "outcome+formatt"], "Unknown reward 'formatt'"),
    (["--estimator", "raee"], "Unknown estimator 'raee'"),
    (["--objective", "pgg"], "Unknown objective 'pgg'"),
    (["--set", "callbacks=[diversityy]"], "Unknown callback 'diversityy'"),
    (["--opponent", "fixed:nosuch"], "nosuch"),
    (["--opponent", "pool", "--set", "pool.scripted=[nosuch]"], "pool.scripted names 'nosuch'"),
    (["--set", "eval.opponents=[random,nosuch]"], "eval.opponents names 'nosuch'"),
    (["--set", "cold_start.players=[nosuch]"], "cold_start.players names 'nosuch'"),
]


@pytest.mark.parametrize(("args", "message"), BAD_NAMES)
def test_every_name_is_checked_before_any_work(tmp_path, capsys, args, message):
    started = time.perf_counter()
    code = main(["run", *args, "--cold-start", "300", "--out", str(tmp_path), "--name", "r"])
    assert code == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "r").exists()  # no run folder, no cold start
    assert time.perf_counter() - started < 60


def one_role_episode(payoff: float) -> Episode:
    return Episode("solo", 1, {"solver": "learner"}, (), {"solver": payoff})


def test_a_one_role_game_wins_only_with_a_positive_payoff():
    wrong = role_outcomes([one_role_episode(-1.0)] * 4)
    assert wrong.get("solver_wins", 0.0) == 0.0 and wrong["solver_losses"] == 1.0
    mixed = role_outcomes([one_role_episode(1.0), one_role_episode(0.0)])
    assert mixed == {"solver_wins": 0.5, "solver_losses": 0.0, "draws": 0.5, "forfeits": 0.0}


def test_an_outcome_no_match_had_is_a_share_of_zero_not_a_blank():
    """metrics.csv reads ``share/draws`` 0 in an iteration without a draw (a blank is skipped
    by plots and means, which then show only the iterations that drew)."""
    won = Episode("ttt", 1, {"x": "learner", "o": "learner"}, (), {"x": 1.0, "o": -1.0})
    shares = role_outcomes([won, won])
    assert shares == {"x_wins": 1.0, "o_wins": 0.0, "draws": 0.0, "forfeits": 0.0}


class Broken(TicTacToe):
    name = "broken"

    def prompt(self, state, role):
        if state.seed == 2:
            raise ValueError("rule bug")
        return super().prompt(state, role)


def test_the_rollout_voids_a_match_whose_rules_raise_and_plays_the_others():
    from selfplay.api.policy import ScriptedPolicy

    game = Broken()
    random_player = ScriptedPolicy("random")
    seating = dict.fromkeys(game.roles, random_player)
    errors: list[VoidMatch] = []
    episodes = play(game, [seating] * 3, [1, 2, 3], errors=errors)
    assert [e.seed for e in episodes] == [1, 3]
    (void,) = errors
    assert (void.game, void.seed, void.turn, void.call) == ("broken", 2, 0, "observe")
    assert "ValueError: rule bug" in void.error and '"void": true' in void.to_json()
    with pytest.raises(PluginFault, match="seed 2, turn 0"):
        play(game, [seating] * 3, [1, 2, 3])  # without an errors list: a clear error


class Stub:
    """What checkpoint.save needs of Lightning Fabric, on one process."""

    global_rank = 0

    def barrier(self) -> None:
        pass

    def save(self, path, state) -> None:
        import torch

        torch.save(state, path)


@pytest.mark.parametrize("how", ["zero", "short", "flip", "gone", "manifest"])
def test_verify_names_what_is_wrong_with_a_checkpoint(tmp_path, how):
    path = checkpoint.save(Stub(), tmp_path, 1, {"w": list(range(1000))}, {"config.yaml": "a: 1"})
    assert checkpoint.verify(path) is None
    state = path / "state.ckpt"
    data = state.read_bytes()
    if how == "zero":
        state.write_bytes(b"")
    elif how == "short":
        state.write_bytes(data[:-10])
    elif how == "flip":
        state.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif how == "gone":
        state.unlink()
    else:
        (path / "manifest.json").write_text("{")
    why = checkpoint.verify(path)
    assert why and ("state.ckpt" in why or "manifest" in why)
    found = checkpoint.scan(tmp_path)
    assert found.complete == [] and not found.never


def test_a_failed_checkpoint_write_removes_its_partial_folder(tmp_path):
    class Full(Stub):
        def save(self, path, state) -> None:
            path.write_bytes(b"partial")
            raise OSError(28, "No space left on device")

    checkpoint.save(Stub(), tmp_path, 1, {"w": 1}, {})
    with pytest.raises(checkpoint.CheckpointError, match="No space left on device"):
        checkpoint.save(Full(), tmp_path, 2, {"w": 2}, {})
    names = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert names == ["iter-000001", "latest"]


def test_a_clashing_name_stays_listed_and_fails_only_when_used():
    registry = Registry("game")
    registry.add("tictactoe", object, "builtin")
    registry.add("tictactoe", int, "selfplay-plugin-x 1.0")
    assert "tictactoe" in registry and [e.plugin for e in registry] == ["builtin"]
    with pytest.raises(PluginError, match=r"builtin and selfplay-plugin-x 1\.0"):
        registry.get("tictactoe")
