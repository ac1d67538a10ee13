"""Out of memory is an error, not a traceback: the run stops with exit code 6, names the
setting to lower and its value, and keeps its last checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfplay.core.commands.cli import main
from selfplay.core.machine.memory import out_of_memory
from selfplay.core.train import cold_start, rollouts
from selfplay.core.train.update import updater as update

SMALL = ["--cold-start", "5", "--matches", "8", "--set", "eval.matches=2", "--set", "threads=1"]
CPU_FAILURE = "DefaultCPUAllocator: can't allocate memory: you tried to allocate 547444224 bytes."


def run(tmp_path: Path, *extra: str) -> int:
    args = ["run", *SMALL, "--iterations", "3", "--set", "checkpoint_every=1"]
    return main([*args, "--out", str(tmp_path), "--name", "m", *extra])


def fail_on_the_second(monkeypatch, owner, name, error):
    real, calls = getattr(owner, name), []

    def failing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise error
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, failing)


def test_an_update_that_cannot_allocate_names_its_setting_and_keeps_the_checkpoint(
    tmp_path, monkeypatch, capsys
):
    fail_on_the_second(monkeypatch, update.Updater, "update", RuntimeError(CPU_FAILURE))
    assert run(tmp_path) == 6
    said = " ".join(capsys.readouterr().err.split())
    assert "The update ran out of memory" in said and "can't allocate memory" in said
    assert "train.micro_batch_tokens (now auto)" in said
    assert (tmp_path / "m" / "checkpoints" / "iter-000001").is_dir()
    assert "Traceback" not in said
    advice = f"selfplay run --resume {tmp_path / 'm'} --set train.micro_batch_tokens=512"
    assert f"iter-000001: once fixed, continue with `{advice}`" in said
    assert main(advice.split()[1:]) == 0  # the advice can be followed: the run goes on
    assert (tmp_path / "m" / "checkpoints" / "iter-000003").is_dir()


def test_the_resume_command_after_a_resume_leg_carries_what_the_leg_was_given(
    tmp_path, monkeypatch, capsys
):
    """A leg that raised the total and set a time limit runs out of memory: the command it
    prints goes on to the leg's own total, under its limit, with the budget lowered."""
    assert main([*f"run {' '.join(SMALL)} --iterations 1".split(), "--out", str(tmp_path),
                 "--name", "m", "--set", "checkpoint_every=1"]) == 0  # fmt: skip
    capsys.readouterr()
    fail_on_the_second(monkeypatch, update.Updater, "update", RuntimeError(CPU_FAILURE))
    leg = ["run", "--resume", str(tmp_path / "m"), "--iterations", "3", "--set", "minutes=30"]
    assert main(leg) == 6
    said = " ".join(capsys.readouterr().err.split())
    advice = (
        f"selfplay run --resume {tmp_path / 'm'} --iterations 3 --set minutes=30 "
        "--set train.micro_batch_tokens=512"
    )
    assert f"iter-000002: once fixed, continue with `{advice}`" in said
    monkeypatch.undo()
    assert main(advice.split()[1:]) == 0
    assert (tmp_path / "m" / "checkpoints" / "iter-000003").is_dir()


def test_an_allocation_that_fails_in_the_cold_start_is_exit_6_not_a_traceback(
    tmp_path, monkeypatch, capsys
):
    def failing(*args, **kwargs):
        raise RuntimeError(CPU_FAILURE)

    monkeypatch.setattr(cold_start, "_step", failing)
    assert run(tmp_path) == 6
    said = " ".join(capsys.readouterr().err.split())
    assert "error: Ran out of memory (DefaultCPUAllocator: can't allocate memory" in said
    assert '"The run stops: out of memory", says what to lower' in said


def test_an_evaluation_command_that_cannot_allocate_is_exit_6(tmp_path, monkeypatch, capsys):
    from selfplay.core.commands import suites

    def failing(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(suites, "cmd_suite", failing)
    assert main(["eval", "--suite", "solver", "--model", "tiny"]) == 6
    assert "error: Ran out of memory (MemoryError)" in capsys.readouterr().err


def test_a_rollout_that_cannot_allocate_names_the_matches(tmp_path, monkeypatch, capsys):
    fail_on_the_second(monkeypatch, rollouts.Rollouts, "take", MemoryError())
    assert run(tmp_path, "--set", "train.micro_batch_size=4") == 6
    said = " ".join(capsys.readouterr().err.split())
    assert "Playing the iteration's matches ran out of memory" in said
    assert "matches (now 8)" in said and "generation.max_new_tokens (now 8)" in said
    assert "they need a new run" in said


@pytest.mark.parametrize(
    ("error", "memory"),
    [
        (RuntimeError(CPU_FAILURE), True),
        (MemoryError(), True),
        (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
        (RuntimeError("shape mismatch"), False),
        (ValueError("can't allocate memory"), False),  # only an allocator's own errors
    ],
)
def test_what_counts_as_running_out_of_memory(error, memory):
    assert out_of_memory(error) is memory
