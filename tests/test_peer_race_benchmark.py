"""The races against TRL without TRL or a model: the median-of-steps speed, our side's figures
from a run folder, the prompt check, the SmolLM2 race's problems and reward, and the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from project_scripts import load_script

race = load_script("benchmarks/peer_race.py", beside=True)  # its scripts import it by name
smollm2 = load_script("benchmarks/peer_trl_smollm2.py", beside=True)


def test_median_rate_leaves_the_first_step_out() -> None:
    # the first step's one-off costs (10 s) do not count; the median of 2, 4, 3 is 3
    assert race.median_rate([10.0, 2.0, 4.0, 3.0], 60) == pytest.approx(20.0)
    assert race.median_rate([10.0, 2.0, 4.0], 60) == pytest.approx(20.0)  # (2 + 4) / 2
    assert race.median_rate([5.0], 10) == pytest.approx(2.0)  # one step: that one
    with pytest.raises(ValueError, match="at least one step"):
        race.median_rate([], 10)


def test_ours_figures_read_the_run_folder(tmp_path: Path) -> None:
    (tmp_path / "metrics.csv").write_text(
        "iteration,rollout_seconds,update_seconds,mean_reward,elapsed_seconds\n"
        "1,1.0,3.0,0.25,4.5\n"
        "2,0.5,1.5,0.5,7.0\n",
        encoding="utf-8",
    )
    episode = {"turns": [{"prompt_ids": [5, 6, 7]}]}
    (tmp_path / "episodes.jsonl").write_text(json.dumps(episode) + "\n{}\n", encoding="utf-8")
    figures = race.ours_figures(tmp_path)
    assert figures["seconds"] == 7.0  # the training loop, records included
    assert figures["step_seconds"] == [4.0, 2.0]  # rollout + update of each iteration
    assert (figures["generation_seconds"], figures["update_seconds"]) == (1.5, 4.5)
    assert figures["rewards"] == [0.25, 0.5]
    assert figures["prompt_ids"] == [5, 6, 7]


def test_trl_figures_split_the_steps() -> None:
    clock = {"steps": [3.0, 2.0], "generation": [1.0, 0.5], "rewards": [0.1, 0.2], "own": [2.5]}
    figures = race.trl_figures({**clock, "prompt": [1, 2]})
    assert figures["seconds"] == 5.0 and figures["update_seconds"] == 3.5
    assert figures["step_seconds"] == [3.0, 2.0] and figures["trl_step_time"] == [2.5]
    assert figures["prompt_ids"] == [1, 2]


def test_same_prompts_names_a_mismatch() -> None:
    assert race.same_prompts({"ours": [1, 2], "trl": [1, 2]}).startswith("first prompt: the same 2")
    line = race.same_prompts({"ours": [1, 2], "trl": [0, 1, 2]})
    assert line.startswith("WARNING") and "ours 2" in line and "trl 3" in line


def test_completion_text_reads_both_of_trls_forms() -> None:
    assert race.completion_text("12") == "12"
    assert race.completion_text([{"role": "assistant", "content": "12"}]) == "12"


def test_table_prints_both_speeds_and_the_curve(capsys: pytest.CaptureFixture[str]) -> None:
    result = {
        "seconds": 8.0,
        "step_seconds": [4.0, 2.0, 2.0],
        "generation_seconds": 3.0,
        "update_seconds": 5.0,
        "process_seconds": 20.0,
        "foreign_cores": 0.1,
        "rewards": [0.0, 0.25, 0.5],
    }
    rates = race.print_row(1, "ours", result, 64)
    assert rates == {"wall": pytest.approx(24.0), "step": pytest.approx(32.0)}
    other = {"wall": 12.0, "step": 32.0}
    race.print_ratios({"ours": [rates], "trl": [other]}, [("ours", "trl")])
    out = capsys.readouterr().out
    assert "0.000 -> 0.500" in out and "reward by step: 0.00 0.25 0.50" in out
    assert "ours_vs_trl wall=2.00 step=1.00" in out


def test_smollm2_race_problems_and_reward() -> None:
    bank = smollm2.problems()
    assert len(bank) == 160 and all(answer.lstrip("-").isdigit() for _, answer in bank)
    first, second = smollm2.asked(0, 8), smollm2.asked(1, 8)
    assert first == bank[:8] and second == bank[8:16]
    assert smollm2.asked(20, 8) == bank[:8]  # round the bank again
    assert smollm2.reward_of("8 + 2 = 10", "10") == 1.0
    assert smollm2.reward_of("The answer is 10.", "10") == 1.0
    assert smollm2.reward_of("10, or maybe 11", "10") == 0.0  # the last number counts
    assert smollm2.reward_of("ten", "10") == 0.0
    system, user = smollm2.messages(bank[0][0])
    assert system == {"role": "system", "content": smollm2.SYSTEM}
    assert user == {"role": "user", "content": bank[0][0]}
