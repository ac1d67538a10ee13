"""Tic-tac-toe recipes, each measured on the tiny model on a 2-core CPU (benchmarks/RESULTS.md).

``tictactoe`` is the game's own (`selfplay run` with no arguments trains with it): search
targets (core/train/search_targets.py), small minibatches and the compact prompt, whose fewer
tokens pay for twice the iterations; under it the default run gained against ``random`` and
``minimax`` alike on three seeds ("Search targets"). The others are the longer recipes of the
learning benchmark (benchmarks/learning.py).
"""

from __future__ import annotations

from selfplay.api.recipe import Recipe
from selfplay.plugins.hookspecs import hookimpl

TICTACTOE = Recipe(
    "tictactoe",
    "The default run's settings: search targets, minibatches of 64, the compact prompt, 40 "
    "iterations (RESULTS.md, 'Search targets').",
    {
        "game": "tictactoe",
        "train.search_weight": 2.0,
        "train.minibatch_size": 64,
        "game_options.compact": True,
        "iterations": 40,
    },
)

COSINE = Recipe(
    "tictactoe-cosine",
    "The default's settings with the step size annealed to 1e-5 by the last iteration; pure "
    "self-play for 30 minutes is --iterations 180 (RESULTS.md, 'A cosine step size').",
    {"train.lr_schedule": "cosine", "train.lr_min": 1e-5},
    base="tictactoe",
)

LONG = Recipe(
    "tictactoe-long",
    "The default's settings for 360 iterations of pure self-play, 45-75 minutes: non-loss "
    "against minimax 0.90 (0.84-0.95) over the last three evaluations on seeds 0-2, and no "
    "collapse (RESULTS.md, 'Self-play for 360 iterations').",
    {"iterations": 360},
    base="tictactoe",
)

# mirror play and one RAE baseline per opponent, beside the settings both longer recipes share
_LONGER = {
    "game": "tictactoe",
    "game_options.compact": True,
    "matches": 256,
    "train.minibatch_size": 128,
    "objective_options.update_epochs": 2,
    "objective_options.kl_coef": 0.02,
    "estimator_options.decay": 0,
    "estimator_options.per_opponent": True,
    "train.search_weight": 0,  # as measured, before tic-tac-toe's recipe had search targets
}

MIXED = Recipe(
    "tictactoe-mixed",
    "The best 30-minute recipe with scripted players in training: a quarter each of mirror "
    "play, random, minimax and the cold-start copy (RESULTS.md, PO30).",
    {
        **_LONGER,
        "train.lr": 1e-3,
        "opponent": "pool",
        "pool.scripted": ["random", "minimax"],
        "pool.snapshot_every": 0,
        "opponent_options.p_latest": 0.25,
    },
)

SELFPLAY = Recipe(
    "tictactoe-selfplay",
    "The best 20-iteration pure self-play recipe: mirror play and the learner's own greedy "
    "self, no scripted player in training (RESULTS.md, 'g5').",
    {**_LONGER, "train.lr": 3e-4, "opponent_options.greedy": 0.5},
)


@hookimpl
def register_recipes(register):
    for recipe in (TICTACTOE, COSINE, LONG, MIXED, SELFPLAY):
        register(recipe)
