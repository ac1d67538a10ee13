"""Leduc poker's recipe (OpenSpiel's ``leduc_poker``, the ``openspiel`` extra), measured on the
tiny model on a 2-core CPU (benchmarks/RESULTS.md, "Leduc poker: a smaller step").

Two things carry it. The cold start copies the ``random`` player and ``rank``, a scripted
player whose moves depend on its card, so self-play starts from a policy that reads its card
(one that copied ``random`` alone never learnt to). And the update's step is small (lr 1e-4)
under a fixed KL pull of 1.0 toward that cold start: from a 200-step cold start of about the
same exploitability, a step of 3e-4 under a pull of 0.5 made the policy more exploitable than
its cold start in the first iteration, on all three seeds tried (which of the two did more
was not separated).
"""

from __future__ import annotations

from selfplay.api.recipe import Recipe
from selfplay.plugins.hookspecs import hookimpl

LEDUC = Recipe(
    "leduc-poker-legal",
    "Leduc poker through OpenSpiel: a cold start on the random and rank players, then a choice "
    "among the legal moves trained by legal-pg with a small step under a fixed KL pull toward "
    "the cold start, 20 iterations of 128 matches, about an hour: exploitability of the average "
    "of the iterates 1.235 (1.054-1.637) on seeds 0-4, below the cold start's on all five; the "
    "last iterate 1.549 (1.195-2.071), below it on three (RESULTS.md, 'Leduc poker: a smaller "
    "step').",
    {
        "game": "openspiel:leduc_poker",
        "cold_start.steps": 400,
        "cold_start.players": ["random", "rank"],
        "matches": 128,
        "generation.choice": "legal",
        "objective": "legal-pg",
        "reward_mode": "normalize",
        "train.lr": 1e-4,
        "objective_options.kl_coef": 1.0,
        "train.reference_update": 0.0,
        "train.minibatch_size": 64,
        "iterations": 20,
    },
)


@hookimpl
def register_recipes(register):
    register(LEDUC)
