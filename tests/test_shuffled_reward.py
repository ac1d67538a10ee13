"""The ``shuffled`` control: the game's payoffs of another match, so no move earns its reward."""

from __future__ import annotations

from collections import Counter

from selfplay.api.types import Episode
from selfplay.plugins.manager import registries


def episode(seed: int, first: float, roles=("player_0", "player_1")) -> Episode:
    payoffs = dict(zip(roles, (first, -first), strict=True))
    return Episode("kuhn-poker", seed, {r: "learner" for r in roles}, (), payoffs)


def test_payoffs_move_between_matches_and_keep_their_distribution():
    shuffled = registries().rewards.get("shuffled")()
    episodes = [episode(seed, value) for seed, value in enumerate([1, -1, 2, -2, 1, 1, -1, 2])]
    scores = shuffled(episodes)
    given = Counter(tuple(sorted(s.items())) for s in scores)
    played = Counter(tuple(sorted((r, float(v)) for r, v in e.outcome.items())) for e in episodes)
    assert given == played  # the same payoffs, zero-sum each
    assert any(s != e.outcome for s, e in zip(scores, episodes, strict=True))  # but moved
    assert shuffled(episodes) == scores  # the same matches, the same draw


def test_matches_of_other_roles_are_shuffled_apart():
    shuffled = registries().rewards.get("shuffled")()
    episodes = [episode(s, 1) for s in range(4)] + [episode(9, 5, ("a", "b"))]
    assert shuffled(episodes)[-1] == {"a": 5.0, "b": -5.0}


def test_per_turn_scores_move_between_turns_of_a_role():
    from selfplay.api.reward import RewardContext
    from selfplay.games.tictactoe import TicTacToe
    from tests.test_move_value import episode as tictactoe_episode

    game = TicTacToe()
    played = [tictactoe_episode(game, moves) for moves in (["4", "1", "0", "5", "8"], ["0", "4"])]
    played = [Episode(e.game, seed, e.seats, e.turns, {"player_0": 1, "player_1": -1})
              for seed, e in enumerate(played)]  # fmt: skip
    shuffled = registries().rewards.get("shuffled")(of=["outcome", "move-value"])
    shuffled.bind(RewardContext(game=game))
    moves = registries().rewards.get("move-value")()
    moves.bind(RewardContext(game=game))
    assert shuffled.per_turn
    scores, values = shuffled(played), moves(played)
    # outcome 1 or -1 on each turn of its role, plus some turn's move value of that role
    for match, (got, _) in enumerate(zip(scores, values, strict=True)):
        for turn, score in zip(played[match].turns, got, strict=True):
            outcome = 1.0 if turn.role == "player_0" else -1.0
            assert score - outcome in (0.0, -1.0, -2.0)
    spread = sorted(s - (1.0 if t.role == "player_0" else -1.0)
                    for e, g in zip(played, scores, strict=True)
                    for t, s in zip(e.turns, g, strict=True))  # fmt: skip
    assert spread == sorted(v for vs in values for v in vs)  # the same move values, moved


def test_a_run_trains_on_it_and_logs_it(tmp_path):
    import csv

    from selfplay.core.commands.cli import main

    args = ["run", "--game", "kuhn-poker", "--reward", "shuffled", "--cold-start", "0"]
    args += ["--matches", "8", "--iterations", "1", "--set", "eval.matches=2"]
    args += ["--set", "threads=1", "--out", str(tmp_path), "--name", "control"]
    assert main(args) == 0
    with open(tmp_path / "control" / "metrics.csv") as file:
        row = next(csv.DictReader(file))
    assert "reward/shuffled/player_0" in row
