"""What the races against TRL share (peer_trl.py, peer_trl_smollm2.py): each side in a child
process of its own, its figures, and the table they are printed in.

Three speeds per side, each completions per second, because harnesses that time different
spans disagree, and a reader should see which span gave which figure:

- ``wall``: completions over the side's training loop (ours: ``elapsed_seconds`` of its last
  metrics row, every iteration with its records, after the model is loaded; TRL: the sum of
  its steps, ``on_step_begin`` to ``on_step_end``; the raw loop: its steps). The first step
  is in it: its one-off costs (the allocator growing, oneDNN choosing kernels, lazy imports)
  weigh on a short race;
- ``step``: completions of one step over the median step, the first left out (`median_rate`),
  from each trainer's own step clock: ours ``rollout_seconds + update_seconds`` of each
  metrics row, TRL the span above (its own logged ``step_time`` leaves out the gradient
  clipping and the optimiser step, so it is kept beside it, ``trl_step_time``, and never
  used), the raw loop its steps. What a long run's steady state costs;
- ``process`` (seconds, not a speed): the child from its start to its exit: imports, loading
  the model, the trainer's set-up, every step, what it writes at the end (ours: the closing
  checkpoint and summary). What ``time python train.py`` sees.

A harness that times whole processes, or reads TRL's ``train_samples_per_second`` (over its
``train_runtime``, set-up and first step included), measures mostly set-up on a race of a few
seconds; one that leaves threads to each library's default gives TRL every core while
``selfplay`` (which pins ``threads`` and, from its command line, sets OpenMP's passive wait
policy) may use fewer; and the load of other processes moves every figure (``foreign``: cores
they kept busy while the side ran, from /proc/stat, less the side's own CPU time). Ratios
between sides of the same round are what count on a shared machine.

Nothing here imports torch, TRL or selfplay at module level: TRL's side runs these scripts
from TRL's own environment.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def median_rate(step_seconds: Sequence[float], completions: int) -> float:
    """Completions of one step per second of the median step, the first step left out (its
    one-off costs); with a single step, that step."""
    steps = list(step_seconds[1:]) or list(step_seconds)
    if not steps:
        raise ValueError("median_rate needs the seconds of at least one step; got none.")
    return completions / statistics.median(steps)


# ---- each side's own records -----------------------------------------------------------------


def ours_figures(run: Path) -> dict[str, Any]:
    """Our side's figures, from the run folder's metrics.csv (a row per iteration, one step
    each), and the token ids of its first prompt (episodes.jsonl)."""
    with open(run / "metrics.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    with open(run / "episodes.jsonl", encoding="utf-8") as handle:
        first = json.loads(handle.readline())
    rollout = [float(r["rollout_seconds"]) for r in rows]
    update = [float(r["update_seconds"]) for r in rows]
    rewards = [float(r["mean_reward"]) for r in rows]
    return {
        "seconds": float(rows[-1]["elapsed_seconds"]),
        "generation_seconds": sum(rollout),
        "update_seconds": sum(update),
        "step_seconds": [a + b for a, b in zip(rollout, update, strict=True)],
        "rewards": rewards,
        "prompt_ids": first["turns"][0]["prompt_ids"],
    }


def completion_text(completion: Any) -> str:
    """A completion as TRL hands it to a reward: text, or a conversation's one message."""
    return completion if isinstance(completion, str) else completion[0]["content"]


def clock_trl(trainer: Any) -> dict[str, list[float]]:
    """Times a ``GRPOTrainer`` as it trains: each step (``on_step_begin`` to ``on_step_end``:
    generation, scoring, loss, backward, clipping, optimiser step), its generation (TRL's
    ``_generate_and_score_completions``), and what TRL logs each step (``reward``,
    ``step_time``; log every step: ``logging_steps=1``), and the token ids of the first
    prompt it read (``prompt``). The dict fills during ``train()``."""
    from transformers import TrainerCallback

    clock: dict[str, list[Any]] = {"steps": [], "generation": [], "rewards": [], "own": []}
    generate, tokenize = trainer._generate_and_score_completions, trainer._tokenize_prompts

    def recorded_tokenize(prompts: list[Any]) -> Any:
        out = tokenize(prompts)
        clock.setdefault("prompt", list(out[0][0]))
        return out

    trainer._tokenize_prompts = recorded_tokenize

    def timed_generate(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        out = generate(*args, **kwargs)
        clock["generation"].append(time.perf_counter() - start)
        return out

    trainer._generate_and_score_completions = timed_generate

    class StepClock(TrainerCallback):
        def on_step_begin(self, *_: Any, **__: Any) -> None:
            self.start = time.perf_counter()

        def on_step_end(self, *_: Any, **__: Any) -> None:
            clock["steps"].append(time.perf_counter() - self.start)

        def on_log(self, _a: Any, _s: Any, _c: Any, logs: Any = None, **__: Any) -> None:
            if logs and "reward" in logs:
                clock["rewards"].append(float(logs["reward"]))
            if logs and "step_time" in logs:
                clock["own"].append(float(logs["step_time"]))

    trainer.add_callback(StepClock())
    return clock


def trl_figures(clock: dict[str, list[Any]]) -> dict[str, Any]:
    steps, generation = sum(clock["steps"]), sum(clock["generation"])
    return {
        "seconds": steps,
        "generation_seconds": generation,
        "update_seconds": steps - generation,
        "step_seconds": clock["steps"],
        "trl_step_time": clock["own"],
        "rewards": clock["rewards"],
        "prompt_ids": clock.get("prompt", []),
    }


def same_prompts(first_prompts: dict[str, list[int]]) -> str:
    """A line saying whether every side read the same first prompt, token for token."""
    distinct = {tuple(ids) for ids in first_prompts.values()}
    if len(distinct) == 1:
        return f"first prompt: the same {len(next(iter(distinct)))} tokens on every side"
    lengths = ", ".join(f"{side} {len(ids)}" for side, ids in first_prompts.items())
    return f"WARNING: the sides read different first prompts (tokens: {lengths})"


# ---- the parent: a side in a child process, the foreign load ---------------------------------


def cpu_busy_seconds() -> float:
    """Seconds of CPU time all processes have used (every core, from /proc/stat)."""
    with open("/proc/stat", encoding="ascii") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    times = os.times()
    return times.children_user + times.children_system


def run_child(side: str, command: list[str], threads: int) -> dict[str, Any]:
    """Runs one side; its RESULT line, with ``process_seconds`` and ``foreign_cores`` added."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "SELFPLAY_PLOTS": "0"}
    busy, own = cpu_busy_seconds(), children_cpu_seconds()
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = child.communicate()
    wall = time.perf_counter() - start
    own = children_cpu_seconds() - own
    lines = [ln for ln in out.decode().splitlines() if ln.startswith("RESULT ")]
    if child.returncode or not lines:
        raise SystemExit(f"side {side} failed (exit {child.returncode}):\n{err.decode()[-3000:]}")
    result = json.loads(lines[-1][len("RESULT ") :])
    result["process_seconds"] = wall
    result["foreign_cores"] = max(0.0, (cpu_busy_seconds() - busy - own) / wall)
    return result


def bf16_units() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            flags = handle.read()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


# ---- the table -------------------------------------------------------------------------------

HEADER = (
    f"{'round':>5} {'side':<15}{'wall c/s':>9}{'step c/s':>9}{'process s':>10}{'gen s':>8}"
    f"{'upd s':>8}{'foreign':>8}  reward first -> last"
)


def print_row(index: int, side: str, result: dict[str, Any], per_step: int) -> dict[str, float]:
    """One side's row and its learning curve; its two speeds, for the ratios."""
    steps = len(result["step_seconds"])
    rates = {
        "wall": steps * per_step / result["seconds"],
        "step": median_rate(result["step_seconds"], per_step),
    }
    rewards = result["rewards"] or [float("nan")]
    print(
        f"{index:>5} {side:<15}{rates['wall']:>9.1f}{rates['step']:>9.1f}"
        f"{result['process_seconds']:>10.1f}{result['generation_seconds']:>8.2f}"
        f"{result['update_seconds']:>8.2f}{result['foreign_cores']:>8.2f}  "
        f"{rewards[0]:.3f} -> {rewards[-1]:.3f}"
    )
    print(f"{'':>6}reward by step: " + " ".join(f"{r:.2f}" for r in rewards), flush=True)
    return rates


def print_ratios(rates: dict[str, list[dict[str, float]]], pairs: list[tuple[str, str]]) -> None:
    """``a_vs_b wall=...`` and ``step=...``: a's speed over b's, one figure per round."""
    for mine, other in pairs:
        line = [f"{mine}_vs_{other}"]
        for kind in ("wall", "step"):
            ratios = [a[kind] / b[kind] for a, b in zip(rates[mine], rates[other], strict=True)]
            line.append(f"{kind}=" + ",".join(f"{x:.2f}" for x in ratios))
        print(" ".join(line))
