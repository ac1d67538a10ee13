"""Named recipes hold the settings benchmarks/RESULTS.md and README measured: each recipe
resolves to the same configuration as the command its figures quote."""

from __future__ import annotations

import pytest

from selfplay.core.plan.recipes import resolve
from tests.test_recipes import benchmark_scripts, run_config


def test_kuhn_poker_legal_holds_the_settings_readme_measured():
    """The named recipe is the benchmarks/opponents.py run README's five Kuhn seeds quote."""
    readme_figures, opponents = benchmark_scripts("readme_figures", "opponents")
    words = readme_figures.CLAIMS["kuhn-legal-pg"].command.split()
    after = {word: words[at + 1] for at, word in enumerate(words[:-1]) if word.startswith("--")}
    opponent, extra = opponents.variant(after["--samplers"])
    sets = [words[at + 1] for at, word in enumerate(words[:-1]) if word == "--set"]
    game = "kuhn-poker"
    measured = run_config(
        game=game,
        opponent=opponent,
        iterations=int(after["--iterations"]),
        matches=128,  # opponents.py's default
        overrides=[
            *opponents.COMMON,
            f"cold_start.steps={opponents.COLD_START[game]}",
            *extra,
            *sets,
        ],
    )
    named = run_config(recipe="kuhn-poker-legal")
    assert named.recipe == "kuhn-poker-legal"
    left, right = measured.model_dump(), named.model_dump()
    left.pop("recipe"), right.pop("recipe")
    assert left == right


# the --set settings of the command benchmarks/RESULTS.md quotes in "A solver cold-started
# for 500 steps"
NEW_PROBLEMS = [
    "learners.proposer.model_options={layers: 6, hidden: 192}",
    "game_options.compute_answers=always",
    "game_options.solver_reference=game",
    "game_options.new_problems=true",
    "learners.solver.train={minibatch_size: 32, update_epochs: 2}",
    "learners.solver.cold_start={steps: 500}",
]


def test_proposer_solver_sums_holds_the_settings_results_measured(monkeypatch, tmp_path):
    """The named recipe is benchmarks/learners.py's math run with RESULTS.md's settings."""
    import argparse

    from selfplay.core.commands.cli import main
    from selfplay.core.run import trainer

    (learners,) = benchmark_scripts("learners")
    configs = []
    monkeypatch.setattr(trainer, "train", lambda config, console: configs.append(config))
    args = argparse.Namespace(
        out=tmp_path, iterations=30, matches=128, cold_start=200, set=NEW_PROBLEMS
    )
    assert main(learners.math_run(0, args)) == 0
    assert main(["run", "--recipe", "proposer-solver-sums", "--out", str(tmp_path)]) == 0
    measured, named = (resolve(config).model_dump() for config in configs)
    for key in ("recipe", "name", "checkpoint_every"):  # the benchmark's own, not the recipe's
        measured.pop(key), named.pop(key)
    assert measured == named


# the settings of the Leduc poker command benchmarks/RESULTS.md quotes in "Leduc poker: a
# smaller step" (less --seed, --out, --name and the threads and checkpoints of runs side by side)
LEDUC = [
    "cold_start.players=[random,rank]",
    "cold_start.steps=400",
    "train.kl_coef=1.0",
    "train.reference_update=0",
    "train.lr=1e-4",
    "train.minibatch_size=64",
    "reward_mode=normalize",
    "generation.choice=legal",
    "objective=legal-pg",
]


def test_leduc_poker_legal_holds_the_settings_results_measured():
    pytest.importorskip("pyspiel")
    measured = run_config(
        game="openspiel:leduc_poker", iterations=20, matches=128, overrides=LEDUC
    ).model_dump()
    named = run_config(recipe="leduc-poker-legal").model_dump()
    assert named.pop("recipe") == "leduc-poker-legal"
    measured.pop("recipe")
    assert measured == named


# the command of the two first SmolLM2 Kuhn poker seeds benchmarks/RESULTS.md quotes in
# "SmolLM2 learns Kuhn poker by self-play?" (less --seed, --out, --name, threads and minutes),
# with the update of "every legal answer moved by its value" that the recipe took after it
SMOLLM2_KUHN = [
    "lora.enabled=true",
    "cold_start.steps=0",
    "matches=64",
    "estimator=grpo",
    "estimator_options.scale=false",
    "objective_options.uniform_magnet=1",
    "objective_options.kl_coef=0.2",
    "objective_options.kl_direction=reverse",
    "objective_options.update=all-answers",
    "train.lr=1e-3",
    "train.minibatch_size=32",
    "eval.matches=20",
    "iterations=35",
]


def test_kuhn_poker_smollm2_holds_the_settings_results_measured():
    measured = run_config(
        recipe="kuhn-poker-legal", model="smollm2-135m", overrides=SMOLLM2_KUHN
    ).model_dump()
    named = run_config(recipe="kuhn-poker-smollm2").model_dump()
    assert named.pop("recipe") == "kuhn-poker-smollm2"
    assert measured.pop("recipe") == "kuhn-poker-legal"
    assert measured == named
