"""Peer race: our trainer against TRL's ``GRPOTrainer`` on the same single-turn task and CPU.

The task: one-digit addition, the prompt ``a+b=`` and the reward 1 when the completion starts
with the sum. The model: a random-init tiny GPT-2 with our character tokenizer, saved to a
folder this script builds, which both sides load. Each step: 32 prompts x 8 completions of 4
new tokens at temperature 1, learning rate 1e-3, no KL term, a group-mean baseline (ours:
``--estimator grpo``; TRL's own default). 30 steps per side.

Sides, each in its own process, run one after another and alternated for several rounds:

- ``ours``: ``selfplay``'s loop (train()) on a benchmark-only game registered in-process;
- ``trl``: ``GRPOTrainer`` with its defaults (gradient checkpointing on);
- ``trl-no-gc``: the same with ``gradient_checkpointing=False``.

Each prints completions/s over its 30 steps and the split between generation and update, and
the parent adds the foreign CPU load during each side: cores kept busy by other processes
(from /proc/stat, less the side's own CPU time). Ratios between sides of the same round are
what count on a shared machine.

TRL is never a dependency of this project: it runs from an environment of its own, given
with ``--trl-python`` (see benchmarks/README.md for how to build it). Without it only our
side runs.

    python benchmarks/peer_trl.py --trl-python VENV/bin/python [--rounds 3] [--threads 2]
    python benchmarks/peer_trl.py --trl-python VENV/bin/python --precision bf16-mixed

bf16 (``--precision bf16-mixed``) is skipped with a message on a CPU without bf16 units
(``amx_bf16`` or ``avx512_bf16`` in /proc/cpuinfo): there it is emulated and slower than fp32.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROMPTS_PER_STEP = 32
COMPLETIONS_PER_PROMPT = 8
NEW_TOKENS = 4
LEARNING_RATE = 1e-3
SIDES = ("ours", "trl", "trl-no-gc")
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"  # the bare prompt


def problem(index: int) -> tuple[int, int]:
    """The ``index``-th problem of a fixed sequence of one-digit additions."""
    value = (index * 37 + 11) % 100
    return value // 10, value % 10


def reward_of(completion: str, a: int, b: int) -> float:
    return 1.0 if completion.strip().startswith(str(a + b)) else 0.0


# ---- the model folder ----------------------------------------------------------------------


def build_model(folder: Path, seed: int) -> None:
    """A random-init tiny GPT-2 with our character tokenizer (chat template: the bare prompt)."""
    import torch
    from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

    from selfplay.core.models.tokenizer import build_char_tokenizer

    tokenizer = build_char_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=64,
        n_embd=128,
        n_layer=4,
        n_head=4,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


# ---- our side ------------------------------------------------------------------------------


def run_ours(args: argparse.Namespace) -> dict[str, Any]:
    import csv

    from selfplay.api.game import Game, GameState
    from selfplay.core.run.config_loader import build_config
    from selfplay.core.run.trainer import train
    from selfplay.plugins.manager import registries

    class AdditionState(GameState):
        a: int
        b: int
        answer: str | None = None

    class Addition(Game):
        """One answer to ``a+b=``; eight matches in a row share a problem (a GRPO group)."""

        name = "peer-addition"
        roles = ("solver",)
        description = "Benchmark only: one-digit addition, the prompt a+b=."
        State = AdditionState
        zero_sum = False

        def initial(self, seed, rng):
            a, b = problem(seed // COMPLETIONS_PER_PROMPT)
            return AdditionState(seed=seed, a=a, b=b)

        def current_role(self, state):
            return "solver" if state.answer is None else None

        def prompt(self, state, role):
            from selfplay.api.types import Message

            return [Message("user", f"{state.a}+{state.b}=")]

        def parse(self, text):
            return text

        def legal(self, state, role, action):
            return action

        def apply(self, state, role, action):
            return state.model_copy(update={"answer": action})

        def result(self, state):
            if state.answer is None:
                return None
            return {"solver": reward_of(state.answer, state.a, state.b)}

    registries().games.add(Addition.name, Addition, "benchmarks/peer_trl.py")
    out = Path(tempfile.mkdtemp(prefix="peer-ours-"))
    overrides = [
        "cold_start.steps=0",
        f"matches={PROMPTS_PER_STEP * COMPLETIONS_PER_PROMPT}",
        f"generation.max_new_tokens={NEW_TOKENS}",
        f"train.lr={LEARNING_RATE}",
        "train.kl_coef=0",
        f"train.minibatch_size={PROMPTS_PER_STEP * COMPLETIONS_PER_PROMPT}",
        "estimator=grpo",
        f"threads={args.threads}",
        f"hardware.precision={args.precision}",
        f"checkpoint_every={args.steps}",
        "eval.matches=2",
    ]
    flags = {"game": Addition.name, "model": str(args.model), "iterations": args.steps}
    config = build_config(None, {**flags, "seed": args.seed, "out": out, "name": "run"}, overrides)
    train(config)
    with open(out / "run" / "metrics.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rollout = sum(float(r["rollout_seconds"]) for r in rows)
    update = sum(float(r["update_seconds"]) for r in rows)
    total = float(rows[-1]["elapsed_seconds"])
    return {
        "seconds": total,
        "generation_seconds": rollout,
        "update_seconds": update,
        "reward_first": float(rows[0]["mean_reward"]),
        "reward_last": float(rows[-1]["mean_reward"]),
    }


# ---- TRL's side ----------------------------------------------------------------------------


def run_trl(args: argparse.Namespace, checkpointing: bool) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(args.threads)
    count = args.steps * PROMPTS_PER_STEP
    pairs = [problem(i) for i in range(count)]
    data = Dataset.from_dict(
        {"prompt": [f"{a}+{b}=" for a, b in pairs], "a": [a for a, _ in pairs],
         "b": [b for _, b in pairs]}
    )  # fmt: skip

    def addition_reward(completions, a, b, **_):
        return [reward_of(c, x, y) for c, x, y in zip(completions, a, b, strict=True)]

    bf16 = args.precision.startswith("bf16")
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="peer-trl-"),
        use_cpu=True,
        bf16=bf16,
        per_device_train_batch_size=PROMPTS_PER_STEP * COMPLETIONS_PER_PROMPT,
        num_generations=COMPLETIONS_PER_PROMPT,
        max_completion_length=NEW_TOKENS,
        learning_rate=LEARNING_RATE,
        lr_scheduler_type="constant",
        beta=0.0,
        max_steps=args.steps,
        gradient_checkpointing=checkpointing,
        save_strategy="no",
        report_to=[],
        logging_steps=args.steps,
        seed=args.seed,
        dataloader_num_workers=0,
    )
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    trainer = GRPOTrainer(
        model=str(args.model),
        reward_funcs=addition_reward,
        args=config,
        train_dataset=data,
        processing_class=tokenizer,
    )
    clock = {"generation": 0.0, "steps": 0.0, "rewards": []}
    generate = trainer._generate_and_score_completions

    def timed_generate(*a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        out = generate(*a, **k)
        clock["generation"] += time.perf_counter() - start
        return out

    trainer._generate_and_score_completions = timed_generate

    class StepClock(TrainerCallback):
        def on_step_begin(self, *_: Any, **__: Any) -> None:
            self.start = time.perf_counter()

        def on_step_end(self, *_: Any, **__: Any) -> None:
            clock["steps"] += time.perf_counter() - self.start

        def on_log(self, _a: Any, _s: Any, _c: Any, logs: Any = None, **__: Any) -> None:
            if logs and "reward" in logs:
                clock["rewards"].append(logs["reward"])

    trainer.add_callback(StepClock())
    trainer.train()
    rewards = clock["rewards"] or [float("nan")]
    return {
        "seconds": clock["steps"],
        "generation_seconds": clock["generation"],
        "update_seconds": clock["steps"] - clock["generation"],
        "reward_first": float("nan"),
        "reward_last": float(rewards[-1]),
    }


# ---- the parent: alternated rounds, the foreign load ---------------------------------------


def cpu_busy_seconds() -> float:
    """Seconds of CPU time all processes have used (every core, from /proc/stat)."""
    with open("/proc/stat", encoding="ascii") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run_side(side: str, args: argparse.Namespace, model: Path) -> dict[str, Any]:
    python = sys.executable if side == "ours" else args.trl_python
    command = [python, __file__, "--side", side, "--model", str(model), "--steps",
               str(args.steps), "--threads", str(args.threads), "--precision", args.precision,
               "--seed", str(args.seed)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "SELFPLAY_PLOTS": "0"}
    busy, start = cpu_busy_seconds(), time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = child.communicate()
    wall = time.perf_counter() - start
    own = _child_cpu_seconds()
    foreign = max(0.0, (cpu_busy_seconds() - busy - own) / wall)
    lines = [ln for ln in out.decode().splitlines() if ln.startswith("RESULT ")]
    if child.returncode or not lines:
        tail = err.decode()[-2000:]
        raise SystemExit(f"side {side} failed (exit {child.returncode}):\n{tail}")
    result = json.loads(lines[-1][len("RESULT ") :])
    result["foreign_cores"] = foreign
    return result


_last_children_cpu = 0.0


def _child_cpu_seconds() -> float:
    """CPU seconds of the children that ended since the last call."""
    global _last_children_cpu
    times = os.times()
    total = times.children_user + times.children_system
    own, _last_children_cpu = total - _last_children_cpu, total
    return own


def bf16_units() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            flags = handle.read()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trl-python", help="python of an environment with trl installed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", default="32-true", choices=["32-true", "bf16-mixed"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sides", default=",".join(SIDES), help="comma-separated")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a child process
    parser.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        if args.side == "ours":
            result = run_ours(args)
        else:
            result = run_trl(args, checkpointing=args.side == "trl")
        print("RESULT " + json.dumps(result))
        return
    if args.precision.startswith("bf16") and not bf16_units():
        print(
            f"--precision {args.precision} skipped: this CPU has no bf16 units (neither "
            "amx_bf16 nor avx512_bf16 in /proc/cpuinfo), so bf16 is emulated and slower "
            "than fp32; run --precision 32-true here."
        )
        return
    sides = [s for s in args.sides.split(",") if s]
    if not args.trl_python:
        print("no --trl-python: only our side runs (see benchmarks/README.md for TRL's)")
        sides = [s for s in sides if s == "ours"]
    completions = args.steps * PROMPTS_PER_STEP * COMPLETIONS_PER_PROMPT
    print(
        f"{args.steps} steps x {PROMPTS_PER_STEP} prompts x {COMPLETIONS_PER_PROMPT} "
        f"completions, {NEW_TOKENS} new tokens, {args.threads} threads, {args.precision}; "
        f"load average before: {os.getloadavg()[0]:.2f}"
    )
    header = f"{'round':>5} {'side':<10}{'compl/s':>9}{'gen s':>8}{'upd s':>8}{'foreign':>9}"
    print(header + f"{'reward':>8}")
    rates: dict[str, list[float]] = {s: [] for s in sides}
    with tempfile.TemporaryDirectory(prefix="peer-model-") as folder:
        build_model(Path(folder), args.seed)
        _child_cpu_seconds()
        for r in range(args.rounds):
            for side in sides:
                res = run_side(side, args, Path(folder))
                rate = completions / res["seconds"]
                rates[side].append(rate)
                print(
                    f"{r + 1:>5} {side:<10}{rate:>9.1f}{res['generation_seconds']:>8.2f}"
                    f"{res['update_seconds']:>8.2f}{res['foreign_cores']:>9.2f}"
                    f"{res['reward_last']:>8.3f}",
                    flush=True,
                )
    for side in sides[1:]:
        ratios = [a / b for a, b in zip(rates["ours"], rates[side], strict=True)]
        print(f"ours_vs_{side}=" + ",".join(f"{x:.2f}" for x in ratios))


if __name__ == "__main__":
    main()
