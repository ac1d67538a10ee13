"""The scale model (benchmarks/scale_model.py): its invariants and its calibration."""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace

import pytest
from project_scripts import load_script


@pytest.fixture(scope="module")
def sm():
    try:
        yield load_script("benchmarks/scale_model.py")
    finally:
        sys.modules.pop("scale_model", None)


SIZES = (135e6, 1e9, 7e9, 70e9)


def test_more_gpus_never_make_the_update_slower(sm):
    h100 = sm.DEVICES["h100"]
    for params in SIZES:
        for lora in (False, True):
            for zero2 in (False, True):
                run = sm.Run(params, 512, lora=lora)
                times = [
                    sm.phases(run, sm.Layout(h100, gpus=g, zero2=zero2))["update"]
                    for g in (1, 2, 4, 8, 16)
                ]
                assert all(b <= a for a, b in itertools.pairwise(times)), (params, lora, zero2)
                assert times[-1] < times[0] / 4  # and they do help


def test_lora_moves_far_fewer_bytes_than_full_weights(sm):
    h100 = sm.DEVICES["h100"]
    for params in SIZES[1:]:
        full, lora = sm.Run(params, 256), sm.Run(params, 256, lora=True)
        assert sm.trainable(lora) < 0.01 * sm.trainable(full)
        layout = sm.Layout(h100, gpus=8, servers=4)
        assert sm.phases(lora, layout)["weight sync"] < sm.phases(full, layout)["weight sync"]
        assert sm.phases(lora, layout)["all-reduce"] < 0.01 * sm.phases(full, layout)["all-reduce"]


def test_lora_adapters_of_smollm2_match_the_counted_ones(sm):
    """README: rank-8 adapters on SmolLM2-135M's attention projections are 0.9M parameters."""
    assert sm.trainable(sm.Run(135e6, 1, lora=True)) == pytest.approx(921_600)


def test_the_bottleneck_is_named_for_constructed_cases(sm):
    h100 = sm.DEVICES["h100"]
    long_answers = sm.Run(1e9, 64, turns=1, prompt=16, answer=2048)
    assert sm.iteration(long_answers, sm.Layout(h100))[1] == "generation"
    nodes = sm.Run(7e9, 64, turns=1, prompt=16, answer=1, minibatch=8)
    assert sm.iteration(nodes, sm.Layout(h100, gpus=8, nodes=4, zero2=True))[1] == "all-reduce"
    judged = sm.Run(1e9, 256, turns=1, answer=4, judge_calls=8, judge_params=70e9)
    assert sm.iteration(judged, sm.Layout(h100, gpus=8))[1] == "judge"
    heavy = sm.Run(7e9, 256, turns=8, prompt=2000, answer=8, epochs=4)
    layout = sm.Layout(h100, gpus=8, servers=4, overlap=True, zero2=True)
    seconds, bottleneck = sm.iteration(heavy, layout)
    assert bottleneck == "update"
    p = sm.phases(heavy, layout)
    assert seconds == pytest.approx(p["update"] + p["all-reduce"] + p["weight sync"])


def test_overlap_never_costs_more_than_alternating(sm):
    h100 = sm.DEVICES["h100"]
    for params in SIZES:
        for lora in (False, True):
            run = sm.Run(params, 256, lora=lora)
            alternate = sm.Layout(h100, gpus=8, servers=4, zero2=True)
            overlapped = replace(alternate, overlap=True)
            assert sm.iteration(run, overlapped)[0] <= sm.iteration(run, alternate)[0]


def test_a_measured_rate_replaces_the_roofline(sm):
    h100, run = sm.DEVICES["h100"], sm.Run(1e9, 256)
    slow = sm.phases(run, sm.Layout(h100, gen_tokens_per_s=1000))["generation"]
    fast = sm.phases(run, sm.Layout(h100, gen_tokens_per_s=2000))["generation"]
    assert slow == pytest.approx(2 * fast)
    assert slow == pytest.approx(256 * 5 * 32 / 1000)
    measured = sm.phases(run, sm.Layout(h100, gpus=4, update_tokens_per_s=1e4))["update"]
    assert measured > 256 * 5 * 232 / 4e4  # plus the optimiser's pass


def test_memory_says_what_fits(sm):
    h100 = sm.DEVICES["h100"]
    full, lora = sm.Run(7e9, 256), sm.Run(7e9, 256, lora=True)
    assert sm.learner_bytes(full, sm.Layout(h100, gpus=8)) > h100.memory
    assert sm.learner_bytes(full, sm.Layout(h100, gpus=8, zero2=True)) < h100.memory
    assert sm.learner_bytes(lora, sm.Layout(h100)) < 0.25 * h100.memory


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_calibration_is_within_its_stated_error(sm, kind):
    table, worst = sm.calibrate(kind)
    assert worst <= sm.CALIBRATION_ERROR, table
    assert len(table.splitlines()) == len(sm.CALIBRATION[kind]) + 2


def test_command_line_prints_phases_and_refuses_bad_layouts(sm, capsys):
    assert sm.main(["--params", "7e9", "--matches", "256", "--gpus", "8", "--lora"]) == 0
    out = capsys.readouterr().out
    assert "bottleneck:" in out and "generation" in out and "fits" in out
    with pytest.raises(SystemExit):
        sm.main(["--overlap"])
    assert "--overlap needs --servers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        sm.main(["--gpus", "2", "--servers", "2"])
    assert "--servers 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        sm.main(["--matches", "0"])
    assert "--matches must be at least 1, not 0" in capsys.readouterr().err


def test_a_model_that_does_not_fit_cannot_run(sm, capsys):
    h100 = sm.DEVICES["h100"]
    seconds, bottleneck = sm.iteration(sm.Run(70e9, 64, lora=True), sm.Layout(h100, gpus=8))
    assert seconds == float("inf") and bottleneck == "generation"  # 140 GB of bf16 weights
    assert sm.iteration(sm.Run(7e9, 64, lora=True), sm.Layout(h100))[0] < 100
    sm.main(["--params", "7e9", "--gpus", "1"])
    assert "DOES NOT FIT" in capsys.readouterr().out
