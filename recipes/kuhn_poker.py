"""Kuhn poker recipes, measured on a 2-core CPU (benchmarks/RESULTS.md).

Kuhn poker has no recipe of its own (`selfplay run --game kuhn-poker` trains on the plain
defaults); ``kuhn-poker`` is the learning benchmark's (benchmarks/learning.py),
``kuhn-poker-legal`` the tiny model's five-seed one README quotes (benchmarks/opponents.py with the
legal-move objective and a moving KL magnet: RESULTS.md, "Five seeds for the two longer
recipes"; its cold start imitates the ``nash`` player), and ``kuhn-poker-smollm2`` SmolLM2-135M
in pure self-play.
"""

from __future__ import annotations

from selfplay.api.recipe import Recipe
from selfplay.plugins.hookspecs import hookimpl

KUHN = Recipe(
    "kuhn-poker",
    "The learning benchmark's Kuhn poker: a 200-step cold start on the random player, 256 "
    "matches an iteration.",
    {
        "game": "kuhn-poker",
        "cold_start.steps": 200,
        "cold_start.players": ["random"],
        "matches": 256,
    },
)

LEGAL = Recipe(
    "kuhn-poker-legal",
    "Kuhn poker's five-seed recipe: a cold start on the random and Nash players, then a choice "
    "among the legal moves trained by legal-pg under a moving KL magnet, 134 iterations, "
    "20-35 minutes: exploitability 0.082 (0.046-0.128) for the last iterate, 0.050 "
    "(0.041-0.063) for the average of the iterates on seeds 0-4 (RESULTS.md).",
    {
        "game": "kuhn-poker",
        "cold_start.steps": 200,
        "cold_start.players": ["random", "nash"],
        "matches": 128,
        "opponent": "latest",
        "generation.choice": "legal",
        "objective": "legal-pg",
        "train.lr": 5e-5,
        "objective_options.kl_coef": 0.5,
        "train.reference_update": 0.05,
        "eval.matches": 200,
        "pool.snapshot_every": 5,
        "pool.size": 10,
        "pool.matches_per_pair": 64,
        "iterations": 134,
    },
)

SMOLLM2 = Recipe(
    "kuhn-poker-smollm2",
    "SmolLM2-135M in pure self-play, no cold start and no scripted player: the legal choice "
    "under a uniform reverse-KL magnet, every legal answer moved by its value, LoRA at lr "
    "1e-3, 64 matches an iteration, 35 iterations, about 16 minutes at threads=1: the average "
    "of the iterates 0.167 (0.150-0.182) on seeds 0-4 against 0.443 for shuffled-reward "
    "controls, the card read on every seed (RESULTS.md, 'SmolLM2 at Kuhn poker by self-play "
    "alone').",
    {
        "model": "smollm2-135m",
        "lora.enabled": True,
        "cold_start.steps": 0,
        "matches": 64,
        "estimator": "grpo",
        "estimator_options.scale": False,
        "objective_options.uniform_magnet": 1.0,
        "objective_options.kl_coef": 0.2,
        "objective_options.kl_direction": "reverse",
        "objective_options.update": "all-answers",
        "train.lr": 1e-3,
        "train.minibatch_size": 32,
        "eval.matches": 20,
        "iterations": 35,
    },
    base="kuhn-poker-legal",
)


@hookimpl
def register_recipes(register):
    register(KUHN)
    register(LEGAL)
    register(SMOLLM2)
