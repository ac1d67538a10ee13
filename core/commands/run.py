"""`selfplay run`: its flags, and the config they make (a fresh run's from its sources, or a
resumed run's from its folder) handed to the trainer (core/run/trainer.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

RUN_FLAGS = (
    "game",
    "recipe",
    "model",
    "reward",
    "opponent",
    "estimator",
    "objective",
    "iterations",
    "matches",
    "seed",
    "out",
    "name",
)


def cmd_run(args: argparse.Namespace) -> int:
    from selfplay.core.plan.config_loader import build_config
    from selfplay.core.run.folder.run_folder import resume_config
    from selfplay.core.run.trainer import train

    flags = {key: getattr(args, key) for key in RUN_FLAGS}
    flags.update(_shorthand(args))
    if args.logger is not None:
        flags["loggers"] = args.logger
    if args.resume:
        changed = {k: v for k, v in flags.items() if v is not None and k != "iterations"}
        if args.config:
            changed["--config"] = args.config
        config = resume_config(args.resume, args.iterations, changed, args.set or [])
    else:
        config = build_config(args.config, flags, args.set or [])
    train(config, Console(stderr=True))
    return 0


def _shorthand(args: argparse.Namespace) -> dict[str, object]:
    """Flags that set a key inside a section (``--cold-start 200`` is cold_start.steps)."""
    sections: dict[str, object] = {}
    if args.cold_start is not None:
        sections["cold_start"] = {"steps": args.cold_start}
    if args.eval_every is not None:
        sections["eval"] = {"every": args.eval_every}
    given = (
        ("accelerator", args.accelerator),
        ("devices", args.devices),
        ("num_nodes", args.num_nodes),
        ("strategy", args.strategy),
        ("precision", args.precision),
    )
    hardware = {k: v for k, v in given if v}
    if hardware:
        sections["hardware"] = hardware
    if args.lora:
        sections["lora"] = {"enabled": True}
    if args.rollout_workers is not None:
        sections["rollout"] = {"workers": args.rollout_workers}
    if args.learner:
        from selfplay.core.plan.config_loader import learner_flags

        sections["learners"] = learner_flags(args.learner)
    return sections


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--game", help="registered game (see `selfplay games`); default tictactoe")
    add(
        "--recipe",
        help="named run settings (see `selfplay recipes`); default the game's own; none: none",
    )
    add("--model", help="registered model, local HF model folder or hub id; default tiny")
    add("--reward", help="reward expression; default outcome")
    add("--opponent", help="opponent sampler, e.g. latest or fixed:random; default latest")
    add("--estimator", help="advantage estimator; default rae")
    add("--objective", help="what the update minimises (`selfplay objectives`); default pg")
    add("--iterations", type=int, help="total iterations")
    add("--matches", type=int, help="matches per iteration")
    add("--seed", type=int, help="seed of the run")
    add("--out", type=Path, help="folder that holds run folders; default runs")
    add("--name", help="run folder name; default a timestamp")
    add("--resume", type=Path, help="run folder to continue (--iterations is the new total)")
    add("--cold-start", type=int, metavar="STEPS", help="supervised warm-up steps first")
    add("--eval-every", type=int, metavar="N", help="evaluate every N iterations")
    add("--accelerator", help="auto (cuda when a GPU is visible, else cpu), cpu, cuda, mps")
    add("--devices", type=int, help="processes/devices (Lightning Fabric)")
    add("--num-nodes", type=int, metavar="N", help="machines; launch with torchrun or SLURM")
    add("--precision", help="32-true (default), bf16-mixed, bf16-true, 16-mixed")
    add("--strategy", help="auto, ddp, deepspeed_stage_1, deepspeed_stage_2")
    add("--lora", action="store_true", help="train LoRA adapters (see the lora config section)")
    add(
        "--learner",
        action="append",
        metavar="NAME[=MODEL]",
        help="a learner of its own for the role NAME (repeat: one per role; docs/learners.md); "
        "default one shared policy",
    )
    add(
        "--rollout-workers",
        type=int,
        metavar="N",
        help="generate the learner's turns on N local `selfplay serve` workers (rollout section)",
    )
    add(
        "--logger",
        metavar="NAMES",
        help="trackers, comma-separated: csv (always), tensorboard, wandb, mlflow; "
        "default csv,tensorboard",
    )
    add("--config", type=Path, help="YAML file of config keys")
    add(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a key, e.g. generation.temperature=0.7",
    )
