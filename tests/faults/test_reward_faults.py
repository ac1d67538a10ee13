"""Non-finite rewards: dropped where they are made, counted, never in the estimator's state."""

from __future__ import annotations

import math

import pytest
import torch
from kit import TINY, column, said, selfplay

from selfplay.api.estimator import Sample
from selfplay.api.reward import RewardError
from selfplay.core.algorithms.rae import RAE
from selfplay.core.commands.cli import main
from selfplay.core.reward_pipeline import parse_terms
from selfplay.core.train.samples import finite_advantages, finite_samples


def baselines(folder, name: str) -> dict[str, float]:
    state = torch.load(folder / "checkpoints" / name / "state.ckpt", weights_only=True)
    return state["estimator"]["baselines"]


@pytest.mark.parametrize("value", ["nan", pytest.param("inf", marks=pytest.mark.slow)])
def test_non_finite_rewards_are_dropped_counted_and_kept_out_of_the_baseline(tmp_path, value):
    out = selfplay(
        "run", *TINY, "--reward", "outcome+test-spike", "--iterations", "2",
        "--set", f"reward_options.test-spike.value={value}", "--out", str(tmp_path), "--name", "n",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    folder = tmp_path / "n"
    dropped = column(folder, "samples/nonfinite_dropped")
    assert all(int(n) > 0 for n in dropped.values()), dropped
    assert "not a finite number (reward terms: test-spike)" in said(out)
    for name in ("iter-000001", "iter-000002"):
        values = baselines(folder, name).values()
        assert values and all(math.isfinite(v) for v in values)
    assert all(math.isfinite(float(v)) for v in column(folder, "loss").values())


def sample(reward: float, **parts: float) -> Sample:
    return Sample("g", "r", (1,), (2,), (0.0,), reward=reward, group=(1,), parts=parts)


def test_finite_samples_drop_a_non_finite_return_or_part():
    kept, dropped = finite_samples(
        [sample(1.0, outcome=1.0), sample(math.nan), sample(0.0, judge=math.inf)]
    )
    assert [s.reward for s in kept] == [1.0] and len(dropped) == 2
    assert finite_advantages([0.5, math.nan, None, -math.inf]) == ([0.5, None, None, None], 2)


def test_a_non_finite_baseline_saved_by_an_older_run_starts_afresh():
    rae = RAE()
    rae.load_state_dict({"baselines": {"g/r": math.nan, "g/s": 0.25}})
    assert rae.baselines == {"g/s": 0.25}
    (advantage,) = rae([sample(1.0)])
    assert advantage == 0.0  # the first batch sets the baseline again


@pytest.mark.parametrize("spec", ["outcome=1e308", "outcome=1+format=-2e6", "outcome=1e7"])
def test_a_huge_weight_is_refused_when_the_expression_is_read(spec):
    with pytest.raises(RewardError, match="too large"):
        parse_terms(spec)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reward", "outcome=1e308"], "weight '1e308' is too large"),
        (["--set", "train.invalid_reward=.nan"], "train.invalid_reward"),
    ],
)
def test_a_huge_weight_or_a_nan_setting_exits_2_before_any_work(tmp_path, capsys, args, message):
    assert main(["run", *args, "--out", str(tmp_path)]) == 2
    assert message in " ".join(capsys.readouterr().err.split())
    assert not any(tmp_path.iterdir())
