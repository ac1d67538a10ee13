"""Hardware choices that a CPU machine can check: the accelerator, DeepSpeed's guard rails,
and an attention kernel that is not installed. The GPU paths themselves run in
benchmarks/gpu_check.py on a CUDA machine."""

from __future__ import annotations

import gc
import importlib.util
import os
import warnings
from pathlib import Path

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.core.commands.cli import main
from selfplay.core.machine import hardware
from selfplay.core.machine.hardware import (
    build_fabric,
    cpu_has_bf16_units,
    decide_threads,
    frozen_heap,
    gradient_clipper,
)
from selfplay.core.models.tiny import save_tiny
from selfplay.core.plan.config_loader import build_config


def test_auto_accelerator_is_cuda_only_when_a_gpu_is_visible():
    fabric = build_fabric(build_config(None, {}, []))
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert fabric.device.type == expected


def test_deepspeed_on_the_cpu_is_refused_with_the_fix():
    config = build_config(None, {}, ["hardware.accelerator=cpu", "hardware.strategy=deepspeed"])
    with pytest.raises(ConfigError, match=r"CUDA GPUs only.*--strategy ddp"):
        build_fabric(config)


def test_deepspeed_strategy_skips_fabric_clipping():
    fabric = build_fabric(build_config(None, {}, ["hardware.accelerator=cpu"]))
    assert gradient_clipper(fabric, "ddp") == fabric.clip_gradients
    norm = gradient_clipper(fabric, "deepspeed_stage_2")(None, None, max_norm=1.0)
    assert torch.isnan(norm)


@pytest.mark.skipif(
    importlib.util.find_spec("flash_attn") is not None, reason="flash-attn is installed here"
)
def test_missing_attention_kernel_exits_2_naming_the_package(tmp_path, capsys):
    model = save_tiny(tmp_path / "model", num_hidden_layers=1)
    code = main(
        [
            "run",
            "--model",
            str(model),
            "--out",
            str(tmp_path / "runs"),
            "--iterations",
            "1",
            "--set",
            "model_options.attn_implementation=flash_attention_2",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "flash_attention_2" in err and "selfplay-rl[gpu]" in err


def test_zero_stage_3_is_refused_naming_stage_2():
    config = build_config(
        None, {}, ["hardware.accelerator=cuda", "hardware.strategy=deepspeed_stage_3"]
    )
    with pytest.raises(ConfigError, match="use deepspeed_stage_2"):
        build_fabric(config)


def test_cuda_on_a_machine_without_a_gpu_exits_2_with_the_fix(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["run", "--accelerator", "cuda", "--iterations", "1", "--out", "/nonexistent"]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert "--accelerator cuda: this machine shows no CUDA GPU" in error
    assert "use --accelerator cpu" in error


def test_more_gpus_than_the_machine_has_are_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    config = build_config(None, {}, ["hardware.accelerator=cuda", "hardware.devices=2"])
    with pytest.raises(ConfigError, match="asks for 2 GPUs, but this machine shows 1"):
        build_fabric(config)


def test_bf16_units_are_read_from_the_cpu_flags():
    assert cpu_has_bf16_units("flags : fpu avx2 amx_bf16 amx_tile")
    assert cpu_has_bf16_units("flags : fpu avx512f avx512_bf16")
    assert not cpu_has_bf16_units("flags : fpu avx2 avx512f avx512bw")


@pytest.mark.parametrize("units", [True, False])
def test_bf16_on_a_cpu_without_bf16_units_warns_with_the_fix(monkeypatch, units):
    monkeypatch.setattr(hardware, "cpu_has_bf16_units", lambda: units)
    config = build_config(None, {}, ["hardware.accelerator=cpu", "hardware.precision=bf16-mixed"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_fabric(config)
    said = [str(w.message) for w in caught if "bf16 units" in str(w.message)]
    assert bool(said) is not units
    if said:
        assert "--precision 32-true" in said[0] and "bf16-mixed" in said[0]


def test_frozen_heap_leaves_the_collector_as_it_found_it():
    before = gc.get_freeze_count()
    alive = [[] for _ in range(10)]  # tracked by the collector, alive on entry: frozen
    with frozen_heap():
        assert gc.get_freeze_count() >= before + len(alive)
    assert gc.get_freeze_count() == before
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("a failed run unfreezes too")
    assert gc.get_freeze_count() == before


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("strategy", "said"),
    [("fsdp", "FSDP shards every weight"), ("dpp", "Did you mean ddp?")],
)
def test_an_unsupported_or_misspelt_strategy_exits_2_with_a_sentence(strategy, said, capsys):
    assert main(["run", "--strategy", strategy, "--out", "/nonexistent/never"]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert said in error and "deepspeed_stage_2" in error and "Traceback" not in error


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
    assert callers == [Path("core/machine/hardware.py")]


def test_the_command_sets_a_passive_wait_policy_unless_the_user_chose_one(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert main(["games", "--json"]) == 0 and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert main(["games", "--json"]) == 0 and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
