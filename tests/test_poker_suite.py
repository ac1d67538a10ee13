"""The ``poker`` suite: exact exploitability in Kuhn and Leduc poker, and payoffs in both seats."""

from __future__ import annotations

from typing import ClassVar

import pytest

from selfplay.api.policy import Policy, ScriptedPolicy
from selfplay.core.commands.suites import HostBench, find_suite, run_suite
from selfplay.plugins.registry import PluginError

pytest.importorskip("pyspiel")

LEDUC = "openspiel:leduc_poker"


class Scripted(Policy):
    """Each game's scripted player: `nash` in Kuhn poker, `rank` in Leduc poker."""

    name = "scripted"
    players: ClassVar = {"kuhn-poker": ScriptedPolicy("nash"), LEDUC: ScriptedPolicy("rank")}

    def act(self, requests, *, greedy=False):
        return [self.players[r.game.name].act([r], greedy=greedy)[0] for r in requests]


class Uniform(HostBench):
    """A bench whose policy reads as the uniform table (every legal action alike)."""

    def table(self, game):
        return {i.key: {a: 1 / len(i.actions) for a in i.actions} for i in game.information_sets()}


def test_the_registry_lists_the_poker_suite_with_both_games():
    suite = find_suite("poker")
    assert suite.games == ("kuhn-poker", LEDUC)


def test_uniform_play_scores_the_known_exploitability_of_each_game():
    report = run_suite(find_suite("poker"), Uniform(Scripted()), [0, 1], 4, "uniform")
    figures = report["figures"]
    assert figures["kuhn-poker/exploitability"]["mean"] == pytest.approx(0.4583, abs=1e-4)
    assert figures["leduc-poker/exploitability"]["mean"] == pytest.approx(2.3736, abs=1e-4)
    assert figures["leduc-poker/exploitability"]["std"] == 0.0  # the table does not depend on it


def test_the_opponents_own_strategy_breaks_even_over_both_seats():
    """Every seat sees each deal, so a deterministic player against itself nets exactly 0;
    a scripted policy is no table: no exploitability, and a note says why."""
    bench = HostBench(Scripted())
    report = run_suite(find_suite("poker"), bench, [0, 1], 8, "scripted")
    figures = report["figures"]
    assert figures["leduc-poker/payoff_vs_rank"]["values"]["default"] == {"0": 0.0, "1": 0.0}
    for role in ("player_0", "player_1"):
        assert f"leduc-poker/payoff_vs_rank/{role}" in figures
        assert f"kuhn-poker/payoff_vs_nash/{role}" in figures
    assert not any(name.endswith("/exploitability") for name in figures)
    assert any("leduc_poker: the policy cannot be read as a table" in n for n in report["notes"])


def test_without_openspiel_leduc_is_left_out_with_a_note_and_kuhn_still_measured():
    class NoOpenSpiel(Uniform):
        def game(self, name):
            if name == LEDUC:
                raise PluginError("OpenSpiel is missing: pip install 'selfplay-rl[openspiel]'")
            return super().game(name)

    report = run_suite(find_suite("poker"), NoOpenSpiel(Scripted()), [0], 2, "uniform")
    assert "kuhn-poker/exploitability" in report["figures"]
    assert not any(name.startswith("leduc-poker/") for name in report["figures"])
    assert any(n.startswith(f"{LEDUC} left out") and "pip install" in n for n in report["notes"])


def test_a_models_leduc_exploitability_is_the_games_own_for_its_table(monkeypatch):
    """The suite scores the table the bench reads (`policy_table`, the model's probability
    of each answer), not some other one: the first 40 information sets read from the tiny
    model, the rest uniform, to keep the model's part of the test short."""
    from selfplay.core.config import RunConfig
    from selfplay.core.models import policy_table as tables
    from selfplay.core.plan.build import build_learner

    policy = build_learner(RunConfig(model="tiny"))
    bench = HostBench(policy)
    leduc = bench.game(LEDUC)
    few = leduc.information_sets()[:40]
    monkeypatch.setattr(type(leduc), "information_sets", lambda self: few)
    read = tables.policy_table(policy, leduc, 1.0)
    monkeypatch.undo()
    table = {i.key: {a: 1 / len(i.actions) for a in i.actions} for i in leduc.information_sets()}
    table.update(read)
    monkeypatch.setattr(HostBench, "table", lambda _, game: table if game.name == LEDUC else None)
    report = run_suite(find_suite("poker"), HostBench(policy), [0], 2, "tiny")
    assert report["figures"]["leduc-poker/exploitability"]["mean"] == pytest.approx(
        leduc.exploitability(table)
    )
    assert leduc.exploitability(table) != pytest.approx(2.3736, abs=1e-3)  # the model's part counts
