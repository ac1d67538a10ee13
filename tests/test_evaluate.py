"""Evaluation against scripted players: known directions, seats, pairing, intervals, table."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from rich.console import Console

from selfplay.api.policy import MockPolicy, Request, ScriptedPolicy
from selfplay.core.evaluate import EvalResult, eval_seeds, evaluate, summary_table, tasks_table
from selfplay.core.rollout import play
from selfplay.games.kuhn_poker import KuhnPoker
from selfplay.games.tictactoe import TicTacToe


def test_minimax_beats_random_and_never_loses_to_minimax():
    # The learner shares its name ("scripted:minimax") with one opponent: seats are read
    # from the seating objects, so the result is still the learner's.
    results = evaluate(TicTacToe(), ScriptedPolicy("minimax"), matches=100)
    assert list(results) == ["random", "minimax"]
    random_, minimax = results["random"], results["minimax"]
    assert random_.win_rate > 0.8 and random_.losses == 0
    assert minimax.non_loss_rate == 1.0 and minimax.draws == 100
    for result in results.values():
        assert result.matches == 100
        assert result.invalid_rate == 0.0 and result.forfeits == 0
        assert result.mean_action_chars == 3.0  # "[4]"
    assert random_.payoff_by_role["player_0"] == 1.0, "minimax as x always beats random"


def test_garbage_answers_are_all_invalid_and_all_losses():
    results = evaluate(TicTacToe(), MockPolicy(["no idea"]), opponents=["random"], matches=20)
    result = results["random"]
    assert result.invalid_rate == 1.0
    assert result.losses == result.forfeits == 20
    assert result.wins == result.draws == 0
    assert result.mean_payoff == TicTacToe().rules.penalty
    assert result.mean_action_chars == 0.0


def test_the_policy_plays_each_seat_equally_often():
    roles: Counter[str] = Counter()

    def forfeit(req: Request) -> str:
        roles[req.role] += 1  # a garbage answer forfeits: one request per match
        return "pass"

    result = evaluate(TicTacToe(), MockPolicy(forfeit), opponents=["random"], matches=30)
    assert roles == {"player_0": 15, "player_1": 15}
    assert set(result["random"].payoff_by_role) == {"player_0", "player_1"}


def test_each_deal_is_played_from_every_seat():
    game = KuhnPoker()
    seeds = eval_seeds(game, 10, seed=3)
    assert seeds[0::2] == seeds[1::2] and len(set(seeds)) == 5
    assert eval_seeds(game, 10, seed=3) == seeds
    assert eval_seeds(game, 10, seed=4) != seeds
    # Identical players on paired deals: every chip one seat wins, the other seat gives back.
    result = evaluate(game, ScriptedPolicy("nash"), opponents=["nash"], matches=200)["nash"]
    assert result.mean_payoff == 0.0


def test_same_seed_same_result_other_seed_other_deals():
    game = KuhnPoker()
    learner = ScriptedPolicy("random")
    first = evaluate(game, learner, matches=60, seed=7)
    assert evaluate(game, learner, matches=60, seed=7) == first
    assert evaluate(game, learner, matches=60, seed=8) != first


def test_scripted_opponents_stay_stochastic_when_play_is_greedy():
    game = TicTacToe()
    seating = {"player_0": ScriptedPolicy("random"), "player_1": ScriptedPolicy("random")}
    episodes = play(game, [seating] * 20, list(range(20)), greedy=True)
    assert len({ep.state["board"] for ep in episodes}) > 10


@pytest.mark.parametrize("player", ["random", "minimax"])
def test_wilson_intervals_contain_the_point_estimates(player):
    for result in evaluate(TicTacToe(), ScriptedPolicy(player), matches=40).values():
        low, high = result.win_interval
        assert 0.0 <= low <= result.win_rate <= high <= 1.0
        low, high = result.non_loss_interval
        assert 0.0 <= low <= result.non_loss_rate <= high <= 1.0


def test_metrics_are_flat_and_named_by_opponent():
    result = evaluate(TicTacToe(), ScriptedPolicy("minimax"), opponents=["random"], matches=10)
    metrics = result["random"].as_metrics("eval")
    assert metrics["eval/random/win_rate"] == result["random"].win_rate
    assert metrics["eval/random/invalid_rate"] == 0.0
    assert "eval/random/payoff/player_1" in metrics
    assert all(isinstance(v, float) for v in metrics.values())


def test_unknown_opponent_is_named():
    with pytest.raises(ValueError, match=r"'nash'.*minimax, random"):
        evaluate(TicTacToe(), ScriptedPolicy("random"), opponents=["nash"])


def test_summary_table_shows_before_and_after():
    game = TicTacToe()
    before = evaluate(game, MockPolicy(["?"]), matches=10)
    after = evaluate(game, ScriptedPolicy("minimax"), matches=10)
    console = Console(record=True, width=160)
    console.print(summary_table(before, after))
    text = console.export_text()
    assert "random" in text and "minimax" in text
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in text.splitlines()
        if "before" in line or "after" in line
    ]
    # per opponent a row before and a row after; the invalid rate is the last cell
    assert [(row[0], row[1], row[-1]) for row in rows] == [
        ("random", "before", "1.00"), ("", "after", "0.00"),
        ("minimax", "before", "1.00"), ("", "after", "0.00"),
    ]  # fmt: skip
    assert isinstance(after["random"], EvalResult)


def rendered(table) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(table)
    return console.file.getvalue()


def test_the_tasks_table_shows_pass_at_n_and_intervals():
    before = {"eval/held_out/accuracy": 0.25, "eval/held_out/tasks": 20.0}
    before |= {"eval/held_out/void": 0.0, "eval/held_out/pass@4": 0.5}
    after = {**before, "eval/held_out/accuracy": 0.5, "eval/held_out/pass@4": 0.75}
    text = rendered(tasks_table(before, after))
    assert "pass@4" in text and "0.50 [0.30, 0.70] → 0.75" in text
    assert "0.25 [0.11, 0.47] → 0.50 [0.30, 0.70]" in text


def test_the_evaluation_table_gives_both_rates_an_interval():
    result = EvalResult("random", 10, 4, 2, 4, 0, 0.4, 0.6, (0.17, 0.69), (0.31, 0.83), 0, 3, 0)
    text = rendered(summary_table({"random": result}, {"random": result}))
    assert "0.40 [0.17, 0.69]" in text and "0.60 [0.31, 0.83]" in text
