"""RunConfig: precedence of file, flags and --set; errors that name the bad key."""

from __future__ import annotations

import pytest

from selfplay.api.errors import ConfigError
from selfplay.core.commands.cli import main
from selfplay.core.config import RunConfig
from selfplay.core.plan.build import build_game, build_sampler
from selfplay.core.plan.config_loader import build_config


def test_precedence_file_then_flags_then_set(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("game: kuhn-poker\nmatches: 8\ngeneration:\n  temperature: 0.5\n")
    config = build_config(path, {"matches": 16, "seed": None}, ["generation.temperature=0.9"])
    assert config.game == "kuhn-poker"
    assert config.matches == 16
    assert config.generation.temperature == 0.9
    assert config.seed == RunConfig().seed


def test_set_parses_yaml_scalars_and_creates_sections():
    config = build_config(None, {}, ["game_options.max_turns=5", "invalid_moves.allowance=2"])
    assert config.game_options == {"max_turns": 5}
    assert config.invalid_moves.allowance == 2


def test_set_text_with_a_colon_stays_text_and_braces_make_a_mapping():
    config = build_config(
        None,
        {"reward": "judge"},
        ["reward_options.judge.prefill=Score:", "game_options={max_turns: 5}"],
    )
    assert config.reward_options["judge"]["prefill"] == "Score:"
    assert config.game_options == {"max_turns": 5}


def test_unknown_top_level_key_is_named_with_valid_keys():
    with pytest.raises(ConfigError) as err:
        build_config(None, {}, ["matchs=3"])
    message = str(err.value)
    assert "'matchs'" in message and "matches" in message and "iterations" in message


def test_unknown_nested_key_names_the_path_and_its_siblings():
    with pytest.raises(ConfigError) as err:
        build_config(None, {}, ["generation.temprature=0.5"])
    assert "'generation.temprature'" in str(err.value)
    assert "temperature" in str(err.value) and "max_new_tokens" in str(err.value)


def test_bad_value_names_key_and_value():
    with pytest.raises(ConfigError, match=r"'matches'.*got 0"):
        build_config(None, {"matches": 0})


def test_a_lone_value_for_a_list_shows_the_list_form():
    with pytest.raises(ConfigError) as refused:
        build_config(None, {}, ["eval.opponents=minimax"])
    said = " ".join(str(refused.value).split())
    assert "'eval.opponents'" in said and "--set eval.opponents=[minimax]" in said


def test_malformed_set_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        build_config(None, {}, ["matches"])
    with pytest.raises(ConfigError, match="does not exist"):
        build_config(tmp_path / "nope.yaml")
    bad = tmp_path / "list.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        build_config(bad)


def test_game_options_are_checked_against_the_game():
    with pytest.raises(ConfigError, match=r"tictactoe has no option 'board_size'.*max_turns"):
        build_game(RunConfig(game_options={"board_size": 4}))
    with pytest.raises(ConfigError, match=r"game_options\.max_turns"):
        build_game(RunConfig(game_options={"max_turns": 0}))


def test_fixed_opponent_needs_a_player():
    with pytest.raises(ConfigError, match="fixed:random"):
        build_sampler(RunConfig(opponent="fixed"))


def test_the_rollout_section_keeps_older_checkpoints_resumable():
    """A key added later leaves the config hash alone while it holds its default."""
    from selfplay.core.run.folder.checkpoint import config_hash

    data = RunConfig().model_dump(mode="json")
    older = {k: v for k, v in data.items() if k not in ("rollout", "recipe")}
    later = ("micro_batch_tokens", "lr_decay_iterations", "kl_coef_min")
    older["train"] = {k: v for k, v in data["train"].items() if k not in later}
    older["hardware"] = {k: v for k, v in data["hardware"].items() if k != "malloc_trim"}
    assert config_hash(data) == config_hash(older)
    served = {**data, "rollout": {**data["rollout"], "workers": 1}}
    assert config_hash(served) != config_hash(data)


def test_a_checkpoints_settings_agree_with_a_resume_by_one_rule_from_the_schema():
    from selfplay.core.config.changes import differences, resumable

    now = RunConfig().model_dump(mode="json")
    older = {k: v for k, v in now.items() if k != "rollout"}  # written before rollout existed
    assert differences(older, now) == []
    served = {**now, "rollout": {**now["rollout"], "workers": 1}}
    assert differences(older, served) == ["rollout.workers: 0 in the checkpoint, 1 now"]
    faster = {**now, "train": {**now["train"], "lr": 1.0}, "threads": 1, "minutes": 5.0}
    faster["train"]["micro_batch_tokens"] = 512
    assert differences(now, faster) == ["train.lr: 0.0001 in the checkpoint, 1.0 now"]
    assert resumable("learners.solver.train.micro_batch_size") and resumable("logger_options.x")
    assert resumable("train.lr_decay_iterations")  # where the cosine ends: the steps ahead
    assert not resumable("train.lr") and not resumable("learners.solver.train.lr")


def test_a_misspelt_key_suggests_the_right_one_and_describes_every_key(capsys):
    assert main(["run", "--set", "lora.r=2"]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert "Unknown config key 'lora.r'. Did you mean 'lora.rank'?" in error
    assert "lora.rank: Rank r of each adapter's update" in error
    assert main(["run", "--set", "iteratons=2"]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert "Did you mean 'iterations'?" in error and "iterations: Total iterations" in error
    assert "cold_start: Supervised warm-up" in error  # a section: its doc and its keys
