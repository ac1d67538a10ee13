"""Opponent samplers' options, given as ``NAME:ARG`` or ``opponent_options``, are typed and
checked before any work: a bad value names the option, its range and what is valid."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from selfplay.api.errors import ConfigError
from selfplay.core.plan.build import build_sampler
from selfplay.core.plan.config_loader import build_config


def test_pool_colon_a_number_sets_p_latest():
    sampler = build_sampler(build_config(flags={"opponent": "pool:0.5"}))
    assert sampler.p_latest == 0.5 and sampler.options.p_latest == 0.5


@pytest.mark.parametrize("arg", ["1.5", "half"])
def test_a_bad_pool_argument_names_p_latest_and_its_range(arg):
    with pytest.raises(ConfigError, match=rf"--opponent pool:{arg}: .*p_latest.*\(0 to 1\)"):
        build_sampler(build_config(flags={"opponent": f"pool:{arg}"}))


def test_an_unknown_sampler_option_lists_the_valid_ones():
    config = build_config(flags={"opponent": "pool"}, overrides=["opponent_options.p_lates=0.1"])
    with pytest.raises(ConfigError, match="has no option 'p_lates'; its options are: p_latest"):
        build_sampler(config)


def test_a_sampler_without_an_argument_refuses_one():
    with pytest.raises(ConfigError, match="--opponent latest:3 takes no argument"):
        build_sampler(build_config(flags={"opponent": "latest:3"}))


def test_pool_out_of_range_exits_2_before_any_work(tmp_path):
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": ""}
    command = [sys.executable, "-m", "selfplay.core.commands.cli", "run", "--opponent"]
    args = ["pool:1.5", "--out", str(tmp_path), "--name", "x"]
    out = subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2, out.stderr
    said = " ".join(out.stderr.split())
    assert "opponent_options.p_latest: Input should be less than or equal to 1" in said
    assert "Probability (0 to 1)" in said
    assert not (tmp_path / "x").exists()  # refused before a run folder or a cold start
