"""Rough edges a newcomer hit: each test here failed before its fix."""

from __future__ import annotations

import io

import pytest
import torch
from rich.console import Console

from selfplay.api.reward import RewardContext, RewardError
from selfplay.core.commands.cli import main
from selfplay.core.commands.listing import games, games_table, recipes, recipes_table
from selfplay.core.train.samples import untrained_message
from selfplay.games.tictactoe import TicTacToe
from selfplay.rewards.judge import Judge
from selfplay.rewards.quality import Quality


def rendered(table, width: int = 400) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(table)
    return console.file.getvalue()


def test_the_games_table_keeps_bracketed_text_and_shows_factory_defaults():
    text = rendered(games_table(games()))
    assert "answer [check], [bet], [call] or [fold]" in text  # rich markup ate "[check]"
    assert "PydanticUndefined" not in text
    assert "verifier_options = {}" in text


def test_a_misspelt_key_suggests_the_right_one_and_describes_every_key(capsys):
    assert main(["run", "--set", "lora.r=2"]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert "Unknown config key 'lora.r'. Did you mean 'lora.rank'?" in error
    assert "lora.rank: Rank r of each adapter's update" in error
    assert main(["run", "--set", "iteratons=2"]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert "Did you mean 'iterations'?" in error and "iterations: Total iterations" in error
    assert "cold_start: Supervised warm-up" in error  # a section: its doc and its keys


def test_end_of_input_in_play_ends_the_match_quietly(monkeypatch, capsys):
    def ended(*args, **kwargs):
        raise EOFError

    monkeypatch.setattr(Console, "input", ended)
    assert main(["play", "--game", "tictactoe", "--opponent", "scripted:random"]) == 0
    out = capsys.readouterr()
    assert "Input ended before the match did: no result." in out.out
    assert "interrupted" not in out.err


def measured(context: int):
    """A judge model of ``context`` positions whose tokens are characters (like tiny)."""
    return lambda name, messages: (sum(len(m.content) for m in messages), context)


def test_a_default_judge_prompt_too_long_for_its_model_gives_way_to_a_compact_one():
    judge = Judge()
    judge.bind(RewardContext(game=TicTacToe(), measure=measured(256)))
    assert "judge_transcript prompt takes" in judge.notices[0]
    assert "judging with judge_transcript_compact" in judge.notices[0]
    assert len(judge.template.template) < 100
    roomy = Quality()
    roomy.bind(RewardContext(game=TicTacToe(), measure=measured(8192)))
    assert not roomy.notices and "Rate the quality" in roomy.template.template
    quality = Quality()
    quality.bind(RewardContext(game=TicTacToe(), measure=measured(256)))
    assert "quality_compact" in quality.notices[0]


def test_a_chosen_judge_prompt_too_long_for_its_model_is_refused_with_the_fixes():
    judge = Judge(template="judge_strict")
    with pytest.raises(RewardError, match=r"judge_strict prompt takes \d+ tokens .* at most 256"):
        judge.bind(RewardContext(game=TicTacToe(), measure=measured(256)))


def test_the_end_of_a_run_says_when_nothing_was_trained():
    judged = {"update_steps": 0, "reward/judge/asked": 2.0, "reward/judge/unparsable": 2.0}
    said = untrained_message([judged, judged], "runs/x")
    assert said.startswith("0 samples trained: every judge answer was unreadable (judge 4 of 4)")
    assert "`selfplay show runs/x --unreadable`" in said
    assert untrained_message([{"update_steps": 0}], "runs/x").startswith("0 samples trained: no")
    assert untrained_message([judged, {**judged, "update_steps": 1}], "runs/x") is None


def test_debate_judged_by_the_tiny_model_fits_and_says_it_trained_nothing(tmp_path, capsys):
    args = ["run", "--game", "debate", "--reward", "judge+quality", "--iterations", "1"]
    args += ["--matches", "2", "--set", "threads=1", "--out", str(tmp_path), "--name", "d"]
    threads = torch.get_num_threads()
    try:
        assert main(args) == 0
    finally:
        torch.set_num_threads(threads)
    said = " ".join(capsys.readouterr().err.split())
    assert "judging with judge_pairwise_compact" in said
    assert "0 samples trained: every judge answer was unreadable" in said
    assert main(["show", str(tmp_path / "d"), "--unreadable", "--all"]) == 0
    assert "judge on the match (unreadable)" in capsys.readouterr().out


def test_listings_fit_an_80_column_terminal_and_break_module_names_at_their_dots():
    for table in (games_table(games()), recipes_table(recipes())):
        lines = rendered(table, width=80).splitlines()
        assert max(len(line) for line in lines) <= 80
    text = rendered(recipes_table(recipes()), width=80)
    assert "selfplay.recipes" in text and "kuhn-poker-legal" in text
    assert "selfplay.recipes.kuhn_" not in text  # the module name broke at a dot, not mid-word
