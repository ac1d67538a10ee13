"""Maths recipes: STaR, SPIN, DPO and GRPO on one-digit sums, the objective benchmark's
(benchmarks/objectives.py; RESULTS.md, "Objectives side by side").

``math-sums`` is what they share: fresh one-digit sums (the ``sums`` topic, levels 1-2), four
answers a task, a 150-step cold start on the bank's worked solutions; each of the others
starts from it and names the objective.

``proposer-solver-sums`` is proposer/solver self-play on the same sums with a learner per
role: benchmarks/learners.py's math run (RESULTS.md, "A solver cold-started for 500
steps").
"""

from __future__ import annotations

from selfplay.api.recipe import Recipe
from selfplay.plugins.hookspecs import hookimpl

SUMS = Recipe(
    "math-sums",
    "math-solver on fresh one-digit sums, four answers a task, a short cold start on worked "
    "solutions; the objective benchmark's common ground.",
    {
        "game": "math-solver",
        "game_options.topics": ["sums"],
        "game_options.levels": [1, 2],
        "game_options.source": "generated",
        "game_options.answers": 4,
        "cold_start.steps": 150,
        "cold_start.players": ["solution"],
        "generation.max_new_tokens": 24,
        "matches": 64,
        "train.minibatch_size": 128,
        "train.lr": 3e-4,
    },
)

RECIPES = (
    SUMS,
    Recipe(
        "math-star",
        "STaR: sft on the answers the verifier passes, with hinted retries of failed tasks.",
        {
            "objective": "sft",
            "objective_options.keep": "pass",
            "objective_options.rationalize": True,
        },
        base="math-sums",
    ),
    Recipe(
        "math-spin",
        "SPIN: dpo with the bank's worked solution as the chosen side.",
        {
            "objective": "dpo",
            "objective_options.chosen": "reference",
            "objective_options.update_epochs": 2,
        },
        base="math-sums",
    ),
    Recipe(
        "math-dpo",
        "dpo on best-against-worst pairs by the verifier's verdict (the verifier as judge).",
        {"objective": "dpo", "objective_options.update_epochs": 2},
        base="math-sums",
    ),
    Recipe(
        "math-grpo",
        "pg with the group baseline, the policy-gradient reference point.",
        {"objective": "pg", "estimator": "grpo", "objective_options.kl_coef": 0.02},
        base="math-sums",
    ),
)

PROPOSER_SOLVER = Recipe(
    "proposer-solver-sums",
    "math-proposer-solver on one-digit sums, a learner per role (a 6-layer proposer, a 4-layer "
    "solver cold-started for 500 steps), new problems only, the solver scored against the "
    "game's own value; 30 iterations, about 30 minutes. Held-out accuracy, seeds 0-4: cold "
    "start 0.635 on average, 0.79 after 30 iterations, above it on four seeds (RESULTS.md).",
    {
        "game": "math-proposer-solver",
        "game_options.topics": ["sums"],
        "game_options.compute_answers": "always",
        "game_options.solver_reference": "game",
        "game_options.new_problems": True,
        "learners.proposer.model_options": {"layers": 6, "hidden": 192},
        "learners.solver.train": {"minibatch_size": 32},
        "learners.solver.objective_options": {"update_epochs": 2},
        "learners.solver.cold_start": {"steps": 500},
        "cold_start.steps": 200,
        "cold_start.players": ["solution"],
        "generation.max_new_tokens": 48,
        "eval.every": 1,
        "eval.matches": 50,
        "matches": 128,
        "iterations": 30,
    },
)


@hookimpl
def register_recipes(register):
    for recipe in (*RECIPES, PROPOSER_SOLVER):
        register(recipe)
