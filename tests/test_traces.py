"""Suite match traces in OpenSpiel's form: every match written, replayable in OpenSpiel to the
same returns, with each move's prompt and raw answer; `selfplay show` reads them back."""

from __future__ import annotations

import json

import pytest

from selfplay.api.policy import MockPolicy, ScriptedPolicy
from selfplay.core.commands.cli import main
from selfplay.core.commands.suites import HostBench, find_suite, run_suite
from selfplay.core.commands.traces import FORMAT, TraceWriter, episode_of, read_traces

pyspiel = pytest.importorskip("pyspiel")


def traced(tmp_path, suite: str, policy, seeds=(0,), matches=4, phrasings=("default",)):
    bench = HostBench(policy)
    bench.traces = TraceWriter(tmp_path, suite, "a policy")
    run_suite(find_suite(suite), bench, list(seeds), matches, "a policy", phrasings)
    return [trace for _, trace in read_traces(tmp_path)], bench.traces


def replayed(trace):
    """OpenSpiel's state after the trace's history, checking each step on the way."""
    game = pyspiel.load_game(trace["game"])
    state = game.new_initial_state()
    moves = [s for s in trace["steps"] if s["action"] is not None]
    assert [s["action"] for s in moves] == trace["history"]
    for step in moves:
        player = step["player"]
        assert state.current_player() == player
        assert state.action_to_string(player, step["action"]) == step["action_string"]
        state.apply_action(step["action"])
    return state


def test_every_solver_match_is_written_and_replays_in_openspiel(tmp_path):
    traces, writer = traced(tmp_path, "solver", ScriptedPolicy("random"), seeds=(0, 1))
    assert writer.count == len(traces) == 2 * (4 + 4)  # tic-tac-toe and Kuhn, per seed
    assert {t["game"] for t in traces} == {"tic_tac_toe()", "kuhn_poker()"}
    for trace in traces:
        assert trace["format"] == FORMAT and trace["terminal"]
        state = replayed(trace)
        assert state.is_terminal() and state.returns() == trace["returns"]
        meta = trace["metadata"]
        assert meta["suite"] == "solver" and meta["phrasing"] == "default"
        assert meta["measured_role"] in meta["roles"]
        assert trace["agents"][meta["roles"].index(meta["measured_role"])] == "scripted:random"
    board = next(t for t in traces if t["game"] == "tic_tac_toe()")
    moved = [s for s in board["steps"] if s["action"] is not None]
    assert moved[0]["state"]["board"] == ["."] * 9  # OpenSpiel's state struct before the move
    assert all(s["prompt"] and s["answer"] == f"[{s['action']}]" for s in moved)
    kuhn = next(t for t in traces if t["game"] == "kuhn_poker()")
    assert [s["player"] for s in kuhn["steps"][:2]] == [-1, -1]  # the deal is chance's


def test_gtbench_lite_traces_replay_in_openspiel_with_the_same_returns(tmp_path):
    traces, _ = traced(tmp_path, "gtbench-lite", ScriptedPolicy("random"), matches=2)
    assert len({t["game"] for t in traces}) == 8
    for trace in traces:
        state = replayed(trace)
        assert state.is_terminal()
        assert state.returns() == pytest.approx(trace["returns"])


def test_a_forfeit_is_written_with_its_answers_and_is_not_terminal(tmp_path):
    traces, _ = traced(tmp_path, "solver", MockPolicy(["I am not sure."]), matches=2)
    forfeited = [t for t in traces if not t["terminal"]]
    assert forfeited and all(t["forfeit"] in t["metadata"]["roles"] for t in forfeited)
    for trace in forfeited:
        wrong = [s for s in trace["steps"] if s.get("valid") is False]
        assert wrong and all(s["answer"] == "I am not sure." and s["reason"] for s in wrong)
        assert not replayed(trace).is_terminal()


def test_a_trace_reads_back_as_the_match_it_records(tmp_path):
    bench = HostBench(ScriptedPolicy("random"))
    bench.traces = TraceWriter(tmp_path, "solver", "random")
    game = bench.game("kuhn-poker")
    played = bench.matches(game, "nash", 4, 3)
    back = [episode_of(t) for _, t in read_traces(tmp_path)]
    for (_, episode), again in zip(played, back, strict=True):
        assert again.seats == episode.seats and again.outcome == episode.outcome
        assert [(t.role, t.text, t.action, t.valid) for t in again.turns] == [
            (t.role, t.text, t.action, t.valid) for t in episode.turns
        ]
        assert again.turns[0].prompt == episode.turns[0].prompt


def test_eval_writes_traces_and_show_reads_them(tmp_path, capsys):
    folder = tmp_path / "traces"
    args = "eval --suite solver --model tiny --matches 2 --seeds 0 --phrasings obfuscated"
    assert main([*args.split(), "--traces", str(folder)]) == 0
    err = capsys.readouterr().err
    assert "traces: 4 matches in" in err
    lines = (folder / "solver" / "obfuscated.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert "claiming squares" in first["steps"][0]["prompt"][0]["content"]  # the phrasing's
    assert main(["show", str(folder), "--all"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "match 1 · solver · obfuscated · seed 0 · tic_tac_toe() · vs minimax" in out
    assert "INVALID" in out  # the untrained model's answers, as written
    assert main(["show", str(folder), "--all", "--opponent", "nash"]) == 0
    assert "vs minimax" not in capsys.readouterr().out
    assert main(["show", str(folder), "--iteration", "2"]) == 2
    assert "have no iterations" in " ".join(capsys.readouterr().err.split())


def test_a_game_without_an_openspiel_form_is_refused_naming_it(tmp_path):
    from selfplay.api.errors import ConfigError

    bench = HostBench(ScriptedPolicy("random"))
    bench.traces = TraceWriter(tmp_path, "mine", "random")
    with pytest.raises(ConfigError, match="rock-paper-scissors has no OpenSpiel form"):
        bench.matches(bench.game("rock-paper-scissors"), "random", 2, 0)


@pytest.mark.parametrize("where", ["afile", "afile/under", "traces"])
def test_a_traces_path_that_cannot_hold_them_is_refused_before_any_work(
    tmp_path, capsys, monkeypatch, where
):
    import selfplay.core.commands.suites as suites

    def no_model(args):
        raise AssertionError("the policy loaded before --traces was checked")

    monkeypatch.setattr(suites, "load_policy", no_model)
    (tmp_path / "afile").write_text("kept\n")
    (tmp_path / "traces" / "solver" / "default.jsonl").mkdir(parents=True)
    args = ["eval", "--suite", "solver", "--model", "tiny", "--phrasings", "default"]
    assert main([*args, "--traces", str(tmp_path / where)]) == 2
    said = "".join(capsys.readouterr().err.split())
    if where == "traces":
        assert "default.jsonlisafolder" in said and "passanother--tracesfolder" in said
    else:
        assert f"{tmp_path / 'afile'}isafile,notafolder".replace(" ", "") in said
        assert "pass e.g. --traces traces/".replace(" ", "") in said
    assert (tmp_path / "afile").read_text() == "kept\n"  # nothing lost
