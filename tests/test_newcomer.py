"""What a newcomer following README tripped on (issue 35, items 4a-4l), each pinned by a test."""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from rich.console import Console

from selfplay.core.commands.cli import main
from selfplay.core.commands.serve import stopped_by_signal
from selfplay.core.evaluate import EvalResult, summary_table, tasks_table
from selfplay.core.run.build import check_players
from selfplay.core.run.config_loader import build_config
from selfplay.core.run.hardware import decide_threads, quiet_libraries
from selfplay.core.run.plots import before_after, read_run
from selfplay.core.run.recipes import resolve
from selfplay.core.train.samples import flat_advantages, unreadable_terms, untrained_message
from selfplay.games.instruct import Instruct
from selfplay.monitors.hacking_monitor import HackingMonitor
from selfplay.monitors.trajectory_filter import TrajectoryFilter

ROOT = Path(__file__).resolve().parents[1]


def rendered(table) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(table)
    return console.file.getvalue()


@pytest.fixture(scope="module")
def tictactoe_run(tmp_path_factory):
    """One short run with a cold start, its console output and its folder."""
    out = tmp_path_factory.mktemp("runs")
    args = ["run", "--iterations", "1", "--matches", "2", "--cold-start", "2"]
    args += ["--set", "eval.matches=2", "--out", str(out), "--name", "t"]
    stderr = io.StringIO()
    console = Console(file=stderr, width=200, color_system=None)
    from selfplay.core.commands import cli

    original = cli.Console
    cli.Console = lambda stderr=False, **kw: console if stderr else original(**kw)
    try:
        assert main(args) == 0
    finally:
        cli.Console = original
    return out / "t", stderr.getvalue()


# ---- 4a: instruct runs with its defaults ---------------------------------------------------------


def test_instruct_runs_with_the_defaults_no_cold_start_and_whole_answers():
    config = resolve(build_config(flags={"game": "instruct"}))
    assert config.cold_start.steps == 0 and config.generation.max_new_tokens >= 64
    check_players(config, Instruct())  # the default demonstrator, random, is not asked for


def test_instruct_trains_an_iteration_as_written(tmp_path):
    args = ["run", "--game", "instruct", "--iterations", "1", "--matches", "1"]
    args += ["--set", "game_options.answers=2", "--set", "generation.max_new_tokens=16"]
    assert main([*args, "--out", str(tmp_path), "--name", "i"]) == 0


# ---- 4c: strategies ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "said"),
    [("fsdp", "FSDP shards every weight"), ("dpp", "Did you mean ddp?")],
)
def test_an_unsupported_or_misspelt_strategy_exits_2_with_a_sentence(strategy, said, capsys):
    assert main(["run", "--strategy", strategy, "--out", "/nonexistent/never"]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert said in error and "deepspeed_stage_2" in error and "Traceback" not in error


# ---- 4d: why nothing trained under sft and dpo ---------------------------------------------------


def test_the_end_message_names_sfts_and_dpos_real_causes():
    sft = [{"update_steps": 0, "sft/kept": 0.0}, {"update_steps": 0, "sft/kept": 0.0}]
    assert "sft objective kept none" in untrained_message(sft, "runs/x")
    dpo = [{"update_steps": 0, "pairs/formed": 0, "pairs/ties": 3, "pairs/singletons": 1}]
    said = untrained_message(dpo, "runs/x")
    assert "formed no preference pair (3 prompts whose answers all scored the same" in said
    assert "no learner turn got a score" in untrained_message([{"update_steps": 0}], None)


# ---- 4e and 4j: the closing tables show pass@n and intervals -------------------------------------


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


# ---- 4f: runs that learn nothing say so -


def test_an_iteration_whose_advantages_are_all_zero_says_so():
    said: list[str] = []
    flat_advantages(3, [0.0, 0.0, None], lambda t: t, said.append)
    assert said and "all 2 samples have advantage 0" in said[0]
    flat_advantages(4, [0.0, 0.5], lambda t: t, said.append)
    assert len(said) == 1


def test_a_filter_that_drops_every_match_says_so():
    said: list[str] = []
    view = SimpleNamespace(iteration=2, say=said.append)
    screen = TrajectoryFilter(blocklist=["x"])
    turn = SimpleNamespace(seat="learner", role="player_0", text="x marks it")
    episodes = [SimpleNamespace(turns=[turn])] * 3
    assert screen.on_episodes(view, episodes) == []
    assert "dropped every one of the 3 matches of iteration 2" in said[0]


# ---- 4g: the hacking monitor's note names the real cause --------------------------------------


def test_the_hacking_monitors_note_tells_no_schedule_from_no_metric():
    monitor = HackingMonitor()

    def view(every: int, iteration: int = 4):
        config = SimpleNamespace(eval=SimpleNamespace(every=every))
        return SimpleNamespace(
            config=config, game=SimpleNamespace(name="tictactoe"), iteration=iteration
        )

    assert "evaluate during training (eval.every)" in monitor.unseen_note(view(0))
    note = monitor.unseen_note(view(2))
    assert "though eval.every=2: tictactoe logs no such metric" in note
    assert "eval.every" not in note.split(":", 1)[1].split("logs")[1][:40]
    assert "more iterations than this run trained" in monitor.unseen_note(view(5, 3))
    assert "has no schedule" not in (ROOT / "docs" / "troubleshooting.md").read_text()


# ---- 4h: library noise -


def test_library_noise_is_quieted_and_figures_do_not_warn(tictactoe_run, recwarn):
    quiet_libraries()
    assert logging.getLogger("transformers.tokenization_utils_base").level == logging.ERROR
    run = read_run(tictactoe_run[0])
    assert before_after([run]) is not None
    assert not [w for w in recwarn if "layout" in str(w.message).lower()]
    output = tictactoe_run[1]
    assert "Token indices sequence length" not in output and "Deprecat" not in output


# ---- 4i: one place decides thread counts -


def test_threads_are_decided_in_one_place_and_a_busy_machine_is_named():
    assert decide_threads(0, 2, 0.4) == (2, None)
    threads, note = decide_threads(0, 2, 9.5)
    assert threads == 2 and "busy (load 9.5 on 2 usable cores)" in note
    assert decide_threads(1, 2, 9.5)[0] == 1
    callers = [
        path.relative_to(ROOT)
        for path in (ROOT / "core").rglob("*.py")
        if "set_num_threads(" in path.read_text()
    ]
    assert callers == [Path("core/run/hardware.py")]


def test_the_command_sets_a_passive_wait_policy_unless_the_user_chose_one(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert main(["games", "--json"]) == 0 and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert main(["games", "--json"]) == 0 and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


# ---- 4k: tests leave the process as they found it (these two run in this order) ---------------


def test_a_test_may_change_threads_environment_and_folder(tmp_path):
    torch.set_num_threads(1)
    os.environ["SELFPLAY_LEAK_CHECK"] = "1"
    os.chdir(tmp_path)
    torch.manual_seed(12345)


def test_the_next_test_finds_them_restored():
    assert "SELFPLAY_LEAK_CHECK" not in os.environ
    assert Path.cwd() != Path("/tmp") and "test_a_test_may_change" not in str(Path.cwd())
    assert torch.get_num_threads() == THREADS_AT_IMPORT


THREADS_AT_IMPORT = torch.get_num_threads()


# ---- 4l: what a new user met ---------------------------------------------------------------------


def test_the_games_own_settings_show_before_the_cold_start(tictactoe_run):
    output = tictactoe_run[1]
    assert output.index("recipe tictactoe") < output.index("cold start:")


def test_the_closing_table_is_saved_in_the_run_folder(tictactoe_run):
    folder = tictactoe_run[0]
    summary = json.loads((folder / "summary.json").read_text())
    assert set(summary) == {"before", "after", "tasks_before", "tasks_after"}
    assert summary["after"]["random"]["matches"] == 2
    assert "non-loss [95% CI]" in (folder / "summary.txt").read_text()


def test_a_closed_pipe_is_not_an_error(tictactoe_run, monkeypatch):
    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["show", str(tictactoe_run[0]), "--all"]) == 0


def test_serve_stopped_by_a_signal_exits_128_plus_it():
    def stopped(*signals, should_exit=True):
        inner = SimpleNamespace(_captured_signals=list(signals), should_exit=should_exit)
        return SimpleNamespace(server=inner)

    assert stopped_by_signal(stopped(2)) == 130
    assert stopped_by_signal(stopped(15)) == 143
    assert stopped_by_signal(stopped(should_exit=False)) == 0


def test_version_imports_neither_torch_nor_transformers():
    code = (
        "import sys; from selfplay.core.commands.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines() == ["selfplay 0.1.0", "[]"], out.stderr


def test_exported_files_all_get_the_same_mode(tictactoe_run, tmp_path):
    old = os.umask(0o022)
    try:
        assert main(["export", str(tictactoe_run[0]), str(tmp_path / "hf")]) == 0
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "hf").iterdir()}
    assert modes["model.safetensors"] == 0o644 and set(modes.values()) == {0o644}


def test_the_quick_start_lists_every_file_of_the_run_folder():
    quick_start = (ROOT / "README.md").read_text().split("## Commands")[0]
    for name in ("plots/", "ratings.csv", "crossplay.csv", "summary.json", "episodes.jsonl"):
        assert f"`{name}`" in quick_start, name


# ---- 4b: README's proposer-solver-judge command on the tiny model -------------------------------


@pytest.mark.parametrize(
    ("game", "template"), [("psj", "judge_rigor"), ("instruct", "judge_strict")]
)
def test_a_games_own_judge_template_gives_way_to_its_compact_version(game, template):
    from selfplay.api.reward import RewardContext
    from selfplay.games.proposers.proposer_solver_judge import ProposerSolverJudge
    from selfplay.rewards.judge import Judge

    made = ProposerSolverJudge() if game == "psj" else Instruct()
    measure = lambda name, messages: (sum(len(m.content) for m in messages), 256)  # noqa: E731
    judge = Judge(**made.reward_defaults["judge"])
    judge.bind(RewardContext(game=made, measure=measure))
    assert f"judging with {template}_compact" in judge.notices[0]


def test_an_iteration_whose_judge_answers_were_all_unreadable_says_so():
    said: list[str] = []
    row = {"reward/judge/asked": 2.0, "reward/judge/unparsable": 2.0}
    unreadable_terms(
        1, row | {"reward/quality/asked": 2.0, "reward/quality/unparsable": 1.0}, said.append
    )
    assert len(said) == 1 and "every judge answer was unreadable (2 of 2)" in said[0]
