"""train.weight_average: a moving average of the weights, what evaluations and the last
checkpoint use, and a resumed run that keeps the same average as an uninterrupted one."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from selfplay.core.commands.cli import main
from selfplay.core.train.update.averaging import WeightAverage


def test_the_average_folds_in_each_update_swaps_in_and_back_and_skips_frozen_weights():
    model = torch.nn.Linear(2, 2)
    model.bias.requires_grad_(False)
    average = WeightAverage(model, decay=0.75)
    with average.applied():  # nothing averaged yet: the weights stay
        pass
    first = model.weight.detach().clone()
    average.update()
    with torch.no_grad():
        model.weight.add_(4.0)
        model.bias.add_(1.0)
    average.update()
    raw, bias = model.weight.detach().clone(), model.bias.detach().clone()
    expected = 0.75 * first + 0.25 * raw
    with average.applied():
        assert torch.allclose(model.weight, expected)
        assert torch.equal(model.bias, bias)  # frozen: not averaged
    assert torch.equal(model.weight, raw)  # the raw weights are back, bit for bit
    copy = WeightAverage(model, decay=0.75)
    copy.load_state_dict(average.state_dict())
    copy.apply()
    assert torch.allclose(model.weight, expected) and copy.updates == 2


def _run(out: Path, name: str, *extra: str) -> None:
    args = ["run", "--cold-start", "20", "--matches", "4", "--set", "eval.matches=2"]
    args += ["--set", "threads=1", "--set", "train.weight_average=0.5"]
    args += ["--set", "checkpoint_every=1", "--out", str(out), "--name", name, *extra]
    threads = torch.get_num_threads()
    try:
        assert main(args) == 0
    finally:
        torch.set_num_threads(threads)


def _state(run: Path, iteration: int) -> dict:
    path = run / "checkpoints" / f"iter-{iteration:06d}" / "state.ckpt"
    return torch.load(path, map_location="cpu", weights_only=True)


def _weights(state: dict) -> dict[str, torch.Tensor]:
    return {k.removeprefix("_forward_module."): v for k, v in state["model"].items()}


def test_the_last_checkpoint_holds_the_average_and_a_resumed_run_keeps_it(tmp_path):
    _run(tmp_path, "whole", "--iterations", "3")
    whole = tmp_path / "whole"
    second, last = _state(whole, 2), _state(whole, 3)
    average = {k.removeprefix("_forward_module."): v for k, v in
               last["weight_average"]["average"].items()}  # fmt: skip
    weights = _weights(last)
    assert average and set(average) <= set(weights)
    for name, mean in average.items():
        assert torch.equal(weights[name], mean.to(weights[name].dtype))
    # before the end the checkpoint's model is the raw weights, not yet the average
    raw = _weights(second)
    mid = {k.removeprefix("_forward_module."): v for k, v in
           second["weight_average"]["average"].items()}  # fmt: skip
    assert any(not torch.equal(raw[n], m.to(raw[n].dtype)) for n, m in mid.items())
    _run(tmp_path, "parts", "--iterations", "3", "--set", "minutes=0.00001")  # stops after 1
    for _ in range(2):
        assert main(["run", "--resume", str(tmp_path / "parts"), "--iterations", "3"]) == 0
    resumed = _weights(_state(tmp_path / "parts", 3))
    for name, value in weights.items():
        assert torch.equal(resumed[name], value), name


def test_a_decay_of_one_is_refused():
    from selfplay.api.errors import ConfigError
    from selfplay.core.plan.config_loader import build_config

    with pytest.raises(ConfigError, match="weight_average"):
        build_config(overrides=["train.weight_average=1"])
