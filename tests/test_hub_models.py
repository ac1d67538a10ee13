"""Hub model ids (``Org/Name``) load through a Hugging Face cache the test builds itself.

No network: the cache holds a tiny random model in the hub's layout
(``models--Org--Name/refs/main`` and ``snapshots/<commit>/``); offline runs read it, and an
unreachable hub (a closed local port) falls back to it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfplay.api.errors import ConfigError
from selfplay.core.models.loading import build_learner, hub_folder, is_hub_id
from selfplay.core.models.reward_models import RewardModels
from selfplay.core.models.tiny import save_tiny
from selfplay.core.plan.config_loader import build_config

MODEL = "test-org/tiny-chat"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
HELPER = Path(__file__).parent / "helpers" / "run_selfplay.py"


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache holding MODEL; the hub itself offline."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    repo = cache / ("models--" + MODEL.replace("/", "--"))
    save_tiny(repo / "snapshots" / COMMIT, seed=3)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_a_hub_id_loads_from_the_cache_offline(hub_cache):
    policy = build_learner(build_config(flags={"model": MODEL}))
    assert policy.name == MODEL
    assert hub_folder(MODEL) == hub_cache / "models--test-org--tiny-chat" / "snapshots" / COMMIT
    assert policy.model.config.vocab_size > 0


def test_a_judge_model_may_be_a_hub_id(hub_cache):
    config = build_config()
    judge = RewardModels(config, build_learner(config))(MODEL)
    assert judge.name == f"judge:{MODEL}"


def test_a_model_missing_from_the_cache_offline_names_the_id_and_the_cache(hub_cache):
    with pytest.raises(ConfigError) as err:
        build_learner(build_config(flags={"model": "test-org/not-cached"}))
    message = str(err.value)
    assert "test-org/not-cached" in message and str(hub_cache) in message
    assert "HF_HUB_OFFLINE" in message


def test_an_unreachable_hub_falls_back_to_the_cache_or_says_so(hub_cache, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    assert hub_folder(MODEL).name == COMMIT
    with pytest.raises(ConfigError, match=r"test-org/not-cached.*could not be reached"):
        hub_folder("test-org/not-cached")


def test_hub_ids_and_paths_are_told_apart(tmp_path):
    assert is_hub_id("Qwen/Qwen2.5-0.5B-Instruct") and is_hub_id("org/name@v1.0")
    assert not is_hub_id("tiny") and not is_hub_id("/abs/path") and not is_hub_id("a/b/c")
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "name").mkdir()
    assert not is_hub_id(str(tmp_path / "org" / "name"))
    with pytest.raises(ConfigError, match="neither a registered model"):
        build_learner(build_config(flags={"model": "no-such-model"}))


def cli(hub_cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ, "SELFPLAY_LOAD_PLUGINS": "", "OMP_NUM_THREADS": "1",
        "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1",
    }  # fmt: skip
    return subprocess.run(
        [sys.executable, str(HELPER), *args], env=env, capture_output=True, text=True, timeout=600
    )


def test_selfplay_run_names_a_hub_id_it_cannot_find(hub_cache):
    out = cli(hub_cache, "run", "--model", "test-org/absent", "--iterations", "1")
    assert out.returncode == 2, out.stderr[-2000:]
    assert "test-org/absent" in out.stderr and "HF_HUB_OFFLINE" in out.stderr


@pytest.mark.slow
def test_selfplay_run_takes_a_hub_id_offline(hub_cache, tmp_path):
    out = cli(
        hub_cache, "run", "--model", MODEL, "--game", "tictactoe", "--iterations", "1",
        "--matches", "4", "--cold-start", "0", "--set", "eval.matches=2",
        "--out", str(tmp_path), "--name", "run",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"model: {MODEL}" in (tmp_path / "run" / "config.yaml").read_text()
