"""The gtbench-lite and reference-pool suites, their scores (NRA, Bradley-Terry), the prompt
phrasings every suite runs under, and suite reports saved in a run folder."""

from __future__ import annotations

import json
import random
import re
import sys
from typing import ClassVar

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.policy import MockPolicy, Policy, ScriptedPolicy
from selfplay.core.commands.cli import main
from selfplay.core.commands.suites import HostBench, find_suite, run_suite
from selfplay.core.config import RunConfig
from selfplay.core.plan.build import build_game
from selfplay.suites.gtbench import nra
from selfplay.suites.reference_pool import anchored_ratings

pytest.importorskip("pyspiel")

PHRASED_GAMES = ("tictactoe", "kuhn-poker", "openspiel:kuhn_poker", "openspiel:connect_four")


# ---- normalized relative advantage ------------------------------------------------------------


def test_nra_is_the_normalized_difference_of_summed_payoffs():
    # a win (+1/-1), a loss (-1/+1) and a win: (1 - (-1)) / 6
    assert nra([(1, -1), (-1, 1), (1, -1)]) == pytest.approx(2 / 6)
    assert nra([(1, -1), (1, -1)]) == 1.0  # every match won
    assert nra([(-1.5, 0.5), (-1.5, 0.5)]) == -1.0  # every match forfeited
    assert nra([(2, 0), (0, 1)]) == pytest.approx(1 / 3)  # general-sum payoffs


def test_nra_of_nothing_scored_is_zero_and_its_sign_follows_the_advantage():
    assert nra([(0, 0), (0, 0)]) == 0.0  # 0/0: no advantage either way
    better = [(1, -1), (0, 0), (1, -1), (-1, 1)]
    worse = [(b, a) for a, b in better]
    assert nra(better) > 0 > nra(worse)
    assert nra(better) == pytest.approx(-nra(worse))


# ---- Bradley-Terry ratings --------------------------------------------------------------------


def table(wins: dict[tuple[str, str], tuple[int, int, int]]) -> list[tuple[str, str, float]]:
    """Match results from (a, b) -> (a's wins, draws, a's losses)."""
    results = []
    for (a, b), (won, drawn, lost) in wins.items():
        results += [(a, b, 1.0)] * won + [(a, b, 0.5)] * drawn + [(a, b, 0.0)] * lost
    return results


def test_bradley_terry_recovers_the_order_and_keeps_the_anchor():
    results = table(
        {
            ("strong", "middle"): (7, 2, 1),
            ("middle", "weak"): (6, 2, 2),
            ("weak", "strong"): (1, 0, 9),
        }
    )
    ratings = anchored_ratings(results, anchored="weak", anchor=1000.0)
    assert ratings["weak"] == pytest.approx(1000.0)
    assert ratings["strong"] > ratings["middle"] > ratings["weak"]
    moved = anchored_ratings(results, anchored="weak", anchor=1500.0)
    assert moved["strong"] - moved["weak"] == pytest.approx(ratings["strong"] - 1000.0)


def test_an_even_record_rates_equal_and_a_player_who_never_scores_stays_finite():
    even = anchored_ratings(table({("a", "b"): (4, 2, 4)}), anchored="a")
    assert even["b"] == pytest.approx(even["a"])
    shut_out = anchored_ratings(table({("zero", "one"): (0, 0, 4)}), anchored="one")
    assert 0 < shut_out["zero"] < shut_out["one"] == pytest.approx(1000.0)


# ---- phrasings --------------------------------------------------------------------------------


def prompts(name: str, phrasing: str) -> list[str]:
    game = build_game(RunConfig(game=name, game_options={"phrasing": phrasing}))
    state = game.reset(0)
    seen = []
    while (role := game.to_act(state)) is not None:
        seen.append("\n".join(m.content for m in game.observe(state, role)))
        state = game.step(state, role, game.legal_actions(state, role)[0])
    return seen


@pytest.mark.parametrize("name", PHRASED_GAMES)
def test_each_game_has_two_phrasings_that_differ_in_every_prompt(name):
    default, reworded = prompts(name, "default"), prompts(name, "reworded")
    assert len(default) == len(reworded) > 0
    assert all(a != b for a, b in zip(default, reworded, strict=True))


@pytest.mark.parametrize("name", PHRASED_GAMES)
def test_every_rewording_applies_to_the_default_prompt(name):
    game = build_game(RunConfig(game=name))
    text = "\n".join(prompts(name, "default"))
    for phrasing, rewording in game.phrasings.items():
        missing = [old for old in rewording if old not in text]
        assert not missing, f"{name} {phrasing}: never shown: {missing}"


def test_a_forced_answer_plays_the_same_under_both_phrasings():
    """The answer format is unchanged: a policy that reads the prompt (the last bracketed
    choice the player is shown) plays the same moves, and so the same matches, under both."""

    def last_shown(request):
        shown = re.findall(r"\[[^\[\]]+\]", request.messages[-1].content)
        return f"I will play {shown[-1]}"

    results = {}
    for phrasing in ("default", "reworded"):
        bench = HostBench(MockPolicy(last_shown), phrasing=phrasing)
        played = bench.matches(bench.game("kuhn-poker"), "nash", 6, 0)
        played += bench.matches(bench.game("openspiel:tic_tac_toe"), "random", 4, 0)
        played += bench.matches(bench.game("openspiel:liars_dice"), "random", 4, 0)
        results[phrasing] = [
            (role, ep.outcome, [t.action for t in ep.turns]) for role, ep in played
        ]
        assert all(t.valid for _, ep in played for t in ep.turns)  # every answer was read
    assert results["default"] == results["reworded"]


def test_an_unknown_phrasing_is_refused_naming_the_known_ones(capsys):
    with pytest.raises(ConfigError, match="no phrasing 'formal'; its phrasings are: default"):
        build_game(RunConfig(game="tictactoe", game_options={"phrasing": "formal"}))
    args = "eval --suite solver --model tiny --matches 2 --seeds 0 --phrasings formal"
    assert main(args.split()) == 2
    assert "no phrasing 'formal'" in " ".join(capsys.readouterr().err.split())


def test_a_runs_own_options_are_kept_under_each_phrasing():
    trained = RunConfig(game="tictactoe", game_options={"compact": True})
    bench = HostBench(policy=None, config=trained, phrasing="reworded")  # type: ignore[arg-type]
    game = bench.game("tictactoe")
    assert game.options.compact and game.options.phrasing == "reworded"
    # a run trained under another wording is measured under the bench's, not its own
    trained = RunConfig(game="tictactoe", game_options={"phrasing": "reworded"})
    bench = HostBench(policy=None, config=trained)  # type: ignore[arg-type]
    assert bench.game("tictactoe").options.phrasing == "default"


# ---- the suites end to end ---------------------------------------------------------------------


def test_gtbench_lite_plays_every_game_in_both_seats_with_nra_and_win_rate(capsys, monkeypatch):
    from selfplay.core.commands import suites

    def untrained(args):  # a policy that writes no move, as an untrained model does; no model
        return MockPolicy(lambda request: "I am not sure."), 1.0, "model tiny", None, None

    monkeypatch.setattr(suites, "load_policy", untrained)
    args = "eval --suite gtbench-lite --model tiny --matches 2 --seeds 0 --json"
    assert main(args.split()) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    figures = report["figures"]
    assert report["phrasings"] == ["default", "reworded"]
    for game in ("tic_tac_toe", "connect_four", "kuhn_poker", "liars_dice"):
        assert f"{game}/nra" in figures and f"{game}/win_rate" in figures
    # a policy that answers nothing legal forfeits every match
    assert figures["nra"]["mean"] == -1.0 and figures["win_rate"]["max"] == 0.0
    for figure in figures.values():  # one value per (phrasing, seed)
        assert {p: set(v) for p, v in figure["values"].items()} == {
            "default": {"0"},
            "reworded": {"0"},
        }
    assert "openspiel:connect_four (reworded), seed 0: the policy vs mcts" in captured.err


def test_gtbench_lite_scores_a_legal_player_between_the_extremes():
    bench = HostBench(ScriptedPolicy("random"))
    report = run_suite(find_suite("gtbench-lite"), bench, [0], 2, "random")
    values = [f["mean"] for name, f in report["figures"].items() if name.endswith("/nra")]
    assert all(-1.0 <= v <= 1.0 for v in values)
    assert any(v > -1.0 for v in values)  # a legal player is not forfeiting everything


class Strongest(Policy):
    """Each pool's strongest agent: minimax, nash, mcts."""

    name = "strongest"
    players: ClassVar = {
        "tictactoe": ScriptedPolicy("minimax"),
        "kuhn-poker": ScriptedPolicy("nash"),
        "openspiel:connect_four": ScriptedPolicy("mcts"),
    }

    def act(self, requests, *, greedy=False):
        return [self.players[r.game.name].act([r], greedy=greedy)[0] for r in requests]


def test_reference_pool_rates_the_policy_among_anchored_agents():
    suite = find_suite("reference-pool")
    report = run_suite(suite, HostBench(Strongest()), [0], 4, "strongest")
    figures = report["figures"]
    assert figures["tictactoe/rating/random"]["mean"] == 1000.0  # the anchor
    # in tic-tac-toe the policy is minimax: it draws minimax and beats random, ranks first
    assert figures["tictactoe/rank"]["mean"] == 1.0
    assert figures["tictactoe/score_vs/minimax"]["mean"] == 0.5
    assert figures["tictactoe/rating"]["mean"] == pytest.approx(
        figures["tictactoe/rating/minimax"]["mean"]
    )
    assert {"kuhn-poker/rating", "connect_four/rating", "connect_four/rank"} <= set(figures)


def test_reference_pool_is_deterministic_given_the_seed():
    suite = find_suite("reference-pool")
    policy = MockPolicy(lambda request: random.Random(request.state.seed).choice(["[0]", "[4]"]))
    first = run_suite(suite, HostBench(policy), [3], 2, "x")["figures"]
    again = run_suite(suite, HostBench(policy), [3], 2, "x")["figures"]
    assert {k: v["values"] for k, v in first.items()} == {k: v["values"] for k, v in again.items()}


# ---- saved in the run folder, shown by `selfplay report` --------------------------------------


def test_a_runs_suite_report_is_saved_in_its_folder_and_shown_by_report(tmp_path, monkeypatch):
    from selfplay.core.commands import suites
    from selfplay.core.run.folder.run_folder import config_text

    pytest.importorskip("matplotlib")  # `selfplay report` draws with it

    folder = tmp_path / "run"
    folder.mkdir()
    config = RunConfig(game="tictactoe", matches=1)
    (folder / "config.yaml").write_text(config_text(config))
    (folder / "metrics.csv").write_text("iteration,mean_reward\n1,0.5\n")
    measured = str(folder / "checkpoints" / "iter-000001")

    def saved_policy(args):  # what loading the run's newest checkpoint gives, without training
        return Strongest(), 1.0, measured, config, folder

    monkeypatch.setattr(suites, "load_policy", saved_policy)
    args = ["eval", "--suite", "reference-pool", str(folder), "--matches", "2", "--seeds", "0"]
    assert main([*args, "--json"]) == 0
    saved = json.loads((folder / "suites" / "reference-pool.json").read_text())
    assert saved["measured"] == measured and saved["phrasings"] == ["default", "reworded"]
    assert saved["figures"]["tictactoe/rank"]["mean"] == 1.0

    assert main(["report", str(folder)]) == 0
    page = (folder / "report.html").read_text()
    section = page.split("<h2>Suite reference-pool: run</h2>")[1]
    assert "phrasings default reworded" in section
    assert "<td>tictactoe/rank</td><td>1.000</td><td>1.000 – 1.000</td>" in section


def test_gtbench_lite_without_openspiel_exits_2_naming_the_extra(monkeypatch, capsys):
    from selfplay.games.openspiel.adapter import game_class

    game_class.cache_clear()  # a cached game class would not ask for pyspiel again
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # as if it were not installed
    try:
        args = "eval --suite gtbench-lite --model tiny --matches 2 --seeds 0"
        assert main(args.split()) == 2
    finally:
        game_class.cache_clear()
    said = " ".join(capsys.readouterr().err.split())
    assert "need the optional extra: pip install 'selfplay-rl[openspiel]'" in said


def test_reference_pool_without_openspiel_says_which_game_it_left_out(monkeypatch):
    from rich.console import Console

    from selfplay.core.commands.suites import suite_table
    from selfplay.games.openspiel.adapter import game_class

    heard = []
    game_class.cache_clear()  # a cached game class would not ask for pyspiel again
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # as if it were not installed
    try:
        bench = HostBench(Strongest(), say=heard.append)
        suite, phrasings = find_suite("reference-pool"), ("default", "reworded")
        report = run_suite(suite, bench, [0], 2, "strongest", phrasings)
    finally:
        game_class.cache_clear()
    assert "tictactoe/rating" in report["figures"]
    assert not [name for name in report["figures"] if name.startswith("connect_four")]
    (note,) = report["notes"]  # said once, though the game was asked for under each phrasing
    assert note.startswith("openspiel:connect_four left out") and "openspiel" in note[30:]
    assert heard.count(f"note: {note}") == 1
    console = Console(width=200, record=True)
    console.print(suite_table(report))
    assert "note: openspiel:connect_four left out" in console.export_text()
