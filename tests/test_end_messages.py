"""What a run says when it learns nothing, and why: all-zero advantages, a filter that drops
every match, a judge whose every answer was unreadable, sft and dpo that kept nothing, and the
end-of-run message."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch

from selfplay.core.commands.cli import main
from selfplay.core.train.checks import (
    flat_advantages,
    unreadable_terms,
    unscored_message,
    untrained_message,
)
from selfplay.monitors.hacking_monitor import HackingMonitor
from selfplay.monitors.trajectory_filter import TrajectoryFilter

ROOT = Path(__file__).resolve().parents[1]


def test_the_end_message_names_sfts_and_dpos_real_causes():
    sft = [{"update_steps": 0, "sft/kept": 0.0}, {"update_steps": 0, "sft/kept": 0.0}]
    assert "sft objective kept none" in untrained_message(sft, "runs/x")
    dpo = [{"update_steps": 0, "pairs/formed": 0, "pairs/ties": 3, "pairs/singletons": 1}]
    said = untrained_message(dpo, "runs/x")
    assert "formed no preference pair (3 prompts whose answers all scored the same" in said
    assert "no learner turn got a score" in untrained_message([{"update_steps": 0}], None)


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


def test_an_iteration_whose_judge_answers_were_all_unreadable_says_so():
    said: list[str] = []
    row = {"reward/judge/asked": 2.0, "reward/judge/unparsable": 2.0}
    unreadable_terms(
        1, row | {"reward/quality/asked": 2.0, "reward/quality/unparsable": 1.0}, said.append
    )
    assert len(said) == 1 and "every judge answer was unreadable (2 of 2)" in said[0]


def test_a_run_stopped_for_unreadable_judges_names_the_setting_that_reads_them():
    reward = SimpleNamespace(
        metrics=lambda: {"reward/quality/asked": 4, "reward/quality/unparsable": 4}
    )
    said = unscored_message(3, 3, reward)
    assert "4 of 4 quality answers were unreadable" in said
    assert "--set reward_options.quality.answer=choose" in said


def test_the_end_of_a_run_says_when_nothing_was_trained():
    judged = {"update_steps": 0, "reward/judge/asked": 2.0, "reward/judge/unparsable": 2.0}
    said = untrained_message([judged, judged], "runs/x")
    assert said.startswith("0 samples trained: every judge answer was unreadable (judge 4 of 4)")
    assert "`selfplay show runs/x --unreadable`" in said
    assert untrained_message([{"update_steps": 0}], "runs/x").startswith("0 samples trained: no")
    assert untrained_message([judged, {**judged, "update_steps": 1}], "runs/x") is None


def test_debate_written_by_the_tiny_judge_fits_and_says_it_trained_nothing(tmp_path, capsys):
    args = ["run", "--game", "debate", "--reward", "judge+quality", "--iterations", "1"]
    args += ["--matches", "2", "--set", "threads=1", "--out", str(tmp_path), "--name", "d"]
    # debate's judges choose their verdicts by default; written, the tiny model's are unreadable
    args += ["--set", "reward_options.judge.answer=write"]
    args += ["--set", "reward_options.quality.answer=write"]
    threads = torch.get_num_threads()
    try:
        assert main(args) == 0
    finally:
        torch.set_num_threads(threads)
    said = " ".join(capsys.readouterr().err.split())
    assert "judging with judge_pairwise_compact" in said
    assert "0 samples trained: every judge answer was unreadable" in said
    assert "(reward_options.NAME.answer=choose)" in said
    assert main(["show", str(tmp_path / "d"), "--unreadable", "--all"]) == 0
    assert "judge on the match (unreadable)" in capsys.readouterr().out
