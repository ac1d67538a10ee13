"""Kuhn poker recipes, measured on the tiny model on a 2-core CPU (benchmarks/RESULTS.md).

Kuhn poker has no recipe of its own (`selfplay run --game kuhn-poker` trains on the plain
defaults); ``kuhn-poker`` is the learning benchmark's (benchmarks/learning.py).
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


@hookimpl
def register_recipes(register):
    register(KUHN)
