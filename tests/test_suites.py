"""Evaluation suites: the registry, the solver suite's figures, and `selfplay eval --suite`."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from selfplay.api.policy import MockPolicy, Policy, ScriptedPolicy
from selfplay.core.commands.cli import main
from selfplay.core.commands.suites import HostBench, find_suite, run_suite
from selfplay.plugins.manager import registries
from selfplay.suites.solver import SolverSuite, value_kept


def test_the_registry_lists_the_solver_suite():
    suites = registries().suites
    assert "solver" in suites
    solver = suites.get("solver")
    assert isinstance(solver, SolverSuite)
    assert set(solver.games) == {"tictactoe", "kuhn-poker"}


def kept_share(player: str, matches: int = 40) -> float:
    bench = HostBench(ScriptedPolicy(player))
    game = bench.game("tictactoe")
    counts = [
        value_kept(role, ep)
        for seed in (0, 1)
        for role, ep in bench.matches(game, "minimax", matches, seed)
    ]
    return sum(k for k, _ in counts) / sum(d for _, d in counts)


def test_minimax_keeps_the_value_with_every_move_and_random_does_not():
    assert kept_share("minimax") == 1.0
    assert kept_share("random") < 1.0


def test_a_forfeited_decision_keeps_nothing():
    bench = HostBench(MockPolicy(lambda request: "no idea"))
    game = bench.game("tictactoe")
    played = bench.matches(game, "minimax", 4, 0)
    assert all(value_kept(role, ep) == (0, 1) for role, ep in played)


class Solved(Policy):
    """The solved strategy of each suite game: minimax in tic-tac-toe, nash in Kuhn poker."""

    name = "solved"
    players: ClassVar = {
        "tictactoe": ScriptedPolicy("minimax"),
        "kuhn-poker": ScriptedPolicy("nash"),
    }

    def act(self, requests, *, greedy=False):
        return [self.players[r.game.name].act([r], greedy=greedy)[0] for r in requests]


def test_the_suite_report_has_every_figure_per_seed_with_its_spread():
    report = run_suite(find_suite("solver"), HostBench(Solved()), [0, 1, 2], 6, "x")
    figures = report["figures"]
    assert figures["tictactoe/value_kept"]["mean"] == 1.0
    assert figures["tictactoe/non_loss_rate"]["min"] == 1.0
    for name in ("player_0", "player_1"):  # both seats, always
        assert f"tictactoe/non_loss_rate/{name}" in figures
        assert f"kuhn-poker/payoff_vs_nash/{name}" in figures
    payoff = figures["kuhn-poker/payoff_vs_nash"]  # nash against nash: luck of the deal only
    assert set(payoff["values"]["default"]) == {"0", "1", "2"}
    assert payoff["min"] <= payoff["mean"] <= payoff["max"] and payoff["std"] >= 0
    # a scripted policy cannot be read as a table: no exploitability, and no pretence of one
    assert "kuhn-poker/exploitability" not in figures


def test_kuhn_exploitability_matches_the_games_own_for_the_same_table():
    from selfplay.core.config import RunConfig
    from selfplay.core.models.policy_table import policy_table
    from selfplay.core.plan.build import build_learner

    policy = build_learner(RunConfig(model="tiny"))
    bench = HostBench(policy)
    kuhn = bench.game("kuhn-poker")
    expected = kuhn.exploitability(policy_table(policy, kuhn, 1.0))
    report = run_suite(find_suite("solver"), bench, [0, 1], 2, "tiny")
    figure = report["figures"]["kuhn-poker/exploitability"]
    assert figure["values"]["default"] == {
        "0": pytest.approx(expected),
        "1": pytest.approx(expected),
    }
    assert figure["std"] == 0.0


def test_eval_suite_with_a_model_end_to_end_as_json(capsys):
    args = "eval --suite solver --model tiny --matches 2 --seeds 0 1 --json"
    code = main(args.split())
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["suite"] == "solver" and report["seeds"] == [0, 1]
    for figure in report["figures"].values():
        assert set(figure) == {"mean", "min", "max", "std", "values"}
        assert set(figure["values"]) == {"default", "reworded"}  # both phrasings, always
        assert all(set(by_seed) == {"0", "1"} for by_seed in figure["values"].values())
    assert "kuhn-poker/exploitability" in report["figures"]


def test_eval_suite_prints_a_table(capsys):
    assert (
        main(["eval", "--suite", "solver", "--model", "tiny", "--matches", "2", "--seeds", "0"])
        == 0
    )
    out = capsys.readouterr().out
    assert "suite solver" in out and "tictactoe/value_kept" in out


def test_an_unknown_suite_exits_2_naming_the_known_ones(capsys):
    assert main(["eval", "--suite", "sovler", "--model", "tiny"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert (
        "Unknown suite 'sovler'; the known suites are: gtbench-lite, poker, reference-pool, solver"
        in said
    )


def test_eval_without_a_policy_exits_2(capsys):
    assert main(["eval"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "--suite solver --model tiny" in said


def test_a_runs_own_game_is_measured_with_the_runs_options():
    from selfplay.core.commands.suites import HostBench
    from selfplay.core.config import RunConfig

    trained = RunConfig(game="tictactoe", game_options={"compact": True})
    bench = HostBench(policy=None, config=trained)  # type: ignore[arg-type]
    assert bench.game("tictactoe").options.compact  # the prompt form the run learned
    assert not HostBench(policy=None).game("tictactoe").options.compact  # type: ignore[arg-type]
    assert bench.game("kuhn-poker").name == "kuhn-poker"  # another game: its defaults


def test_an_unknown_phrasing_is_refused_before_the_policy_loads(capsys, monkeypatch):
    import selfplay.core.commands.suites as suites

    def no_model(args):
        raise AssertionError("the policy loaded before the phrasings were checked")

    monkeypatch.setattr(suites, "load_policy", no_model)
    args = ["eval", "--suite", "solver", "--model", "tiny", "--seeds", "0"]
    assert main([*args, "--phrasings", "default", "obfuscted"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "tictactoe has no phrasing 'obfuscted'; its phrasings are: default, reworded" in said
    assert "(suite solver: --phrasings, --held-out)" in said
    assert main([*args, "--held-out", "menu"]) == 2
    assert "no phrasing 'menu'" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--matches", "1"], "--matches 1: a suite plays both seats"),
        (["--phrasings", "default", "default"], "name each phrasing once"),
        (["--held-out", "default"], "name each phrasing once"),
    ],
)
def test_bad_suite_settings_are_refused_before_the_policy_loads(capsys, monkeypatch, extra, said):
    import selfplay.core.commands.suites as suites

    monkeypatch.setattr(suites, "load_policy", lambda args: pytest.fail("the policy loaded"))
    assert main(["eval", "--suite", "solver", "--model", "tiny", *extra]) == 2
    assert said in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--held-out", "obfuscated"], "--held-out only with --suite"),
        (["--traces", "traces"], "--traces only with --suite"),
        (["--seeds", "4", "--phrasings", "obfuscated"], "--seeds and --phrasings only with"),
    ],
)
def test_a_suites_flag_without_a_suite_is_refused_not_ignored(
    tmp_path, capsys, monkeypatch, extra, said
):
    from selfplay.core.commands import checkpoint_eval

    monkeypatch.setattr(
        checkpoint_eval, "evaluate_checkpoint", lambda *a: pytest.fail("the run was measured")
    )
    monkeypatch.chdir(tmp_path)
    assert main(["eval", str(tmp_path / "run"), *extra]) == 2
    assert said in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "traces").exists()
