"""The instruct game runs with its own defaults (no cold start, whole answers) and trains an
iteration as written."""

from __future__ import annotations

from selfplay.core.commands.cli import main
from selfplay.core.plan.checks import check_players
from selfplay.core.plan.config_loader import build_config
from selfplay.core.plan.recipes import resolve
from selfplay.games.instruct import Instruct


def test_instruct_runs_with_the_defaults_no_cold_start_and_whole_answers():
    config = resolve(build_config(flags={"game": "instruct"}))
    assert config.cold_start.steps == 0 and config.generation.max_new_tokens >= 64
    check_players(config, Instruct())  # the default demonstrator, random, is not asked for


def test_instruct_trains_an_iteration_as_written(tmp_path):
    args = ["run", "--game", "instruct", "--iterations", "1", "--matches", "1"]
    args += ["--set", "game_options.answers=2", "--set", "generation.max_new_tokens=16"]
    assert main([*args, "--out", str(tmp_path), "--name", "i"]) == 0
