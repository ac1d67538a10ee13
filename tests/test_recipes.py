"""Recipes (named run settings) and objectives that own their settings.

A recipe fills in only what the user left unset; the game names its own; a setting the
objective does not read is refused when the user gives it and left out when a recipe does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.recipe import Recipe
from selfplay.core.config import RunConfig
from selfplay.core.plan.config_loader import build_config
from selfplay.core.plan.objectives import bound_objective
from selfplay.core.plan.recipes import applied, recipe_notes, resolve
from selfplay.plugins.manager import registries
from selfplay.plugins.registry import Entry, UnknownName

RECIPE = Recipe(
    "test-recipe",
    "settings measured on nothing",
    {"branches.positions": 16, "estimator_options.per_state": True, "train.lr": 3e-4},
)


@pytest.fixture
def recipe(monkeypatch):
    """``test-recipe`` registered, and tic-tac-toe's own recipe."""
    from selfplay.games.tictactoe import TicTacToe

    entries = registries().recipes.entries
    monkeypatch.setitem(entries, RECIPE.name, Entry(RECIPE.name, RECIPE, "tests"))
    monkeypatch.setattr(TicTacToe, "recipe", RECIPE.name)
    return RECIPE


def run_config(**flags) -> RunConfig:
    overrides = flags.pop("overrides", [])
    return resolve(build_config(None, flags, overrides))


def test_a_recipe_fills_in_only_what_the_user_left_unset(recipe):
    plain = run_config()
    assert plain.recipe == "test-recipe"
    assert plain.branches.positions == 16 and plain.train.lr == 3e-4
    assert plain.estimator_options == {"per_state": True}
    assert "kl_coef" not in plain.objective_options  # the rest stays the objective's default
    assert resolve(plain) == plain  # idempotent
    assert resolve(RunConfig.model_validate(plain.model_dump())) == plain  # a resumed config.yaml
    mine = run_config(overrides=["branches.positions=0", "estimator_options.decay=0", "seed=3"])
    assert mine.branches.positions == 0 and mine.seed == 3
    assert mine.estimator_options == {"per_state": True, "decay": 0}
    other = run_config(estimator="grpo")
    assert other.estimator_options == {} and other.branches.positions == 16  # rae's options only
    assert applied(other) == {"branches.positions": 16, "train.lr": 3e-4}
    assert applied(mine)["branches.positions"] == 0  # what the run trains with
    kuhn = run_config(game="kuhn-poker")  # a game without a recipe of its own
    assert kuhn.recipe == "none" and kuhn.branches.positions == 0 and applied(kuhn) == {}


def test_the_banner_shows_the_users_values_apart_from_the_recipes(recipe):
    from selfplay.core.plan.recipes import recipe_line

    line = recipe_line(run_config(overrides=["train.lr=0.01", "seed=3"]))
    assert line.startswith("recipe test-recipe (set any key to change it; --recipe none): ")
    kept, yours = line.split("; yours instead: ")
    assert "branches.positions=16" in kept and "train.lr" not in kept  # not the recipe's own
    assert yours == "train.lr=0.01 (recipe: 0.0003)"
    assert "yours" not in recipe_line(run_config())


def test_the_banner_names_an_old_train_setting_where_the_run_reads_it(monkeypatch, recipe):
    """A recipe written before the algorithm settings moved (``train.kl_coef``) trains with
    them as the objective's options, and the banner shows them there, not as the user's."""
    from selfplay.core.plan.recipes import recipe_line

    old = Recipe("test-recipe", "old names", {"train.kl_coef": 0.1, "train.entropy_coef": 0.0})
    monkeypatch.setitem(registries().recipes.entries, "test-recipe", Entry("x", old, "tests"))
    line = recipe_line(run_config())
    assert line.endswith(": objective_options.kl_coef=0.1 objective_options.entropy_coef=0.0")
    mine = recipe_line(run_config(overrides=["train.kl_coef=0.3"]))
    assert mine.endswith("yours instead: objective_options.kl_coef=0.3 (recipe: 0.1)")


@pytest.mark.parametrize("name", sorted(e.name for e in registries().recipes))
def test_a_recipe_run_as_it_is_shows_no_setting_as_the_users(name):
    from selfplay.core.plan.recipes import banner_settings

    kept, yours = banner_settings(resolve(build_config(None, {"recipe": name}, [])))
    assert kept and yours == {}


def test_a_broken_recipe_is_named_with_the_way_out(monkeypatch, recipe):
    broken = Recipe("test-recipe", "a typo", {"branches.positons": 4})
    monkeypatch.setitem(registries().recipes.entries, "test-recipe", Entry("x", broken, "tests"))
    with pytest.raises(ConfigError, match=r"(?s)recipe .test-recipe. do not fit.*positons.*none"):
        run_config()


def test_tictactoe_trains_with_its_own_recipe_and_none_turns_it_off():
    default = run_config()
    assert default.recipe == "tictactoe"
    assert default.train.search_weight == 2.0 and default.train.minibatch_size == 64
    assert default.game_options == {"compact": True} and default.iterations == 40
    plain = run_config(recipe="none")
    assert plain.recipe == "none" and plain.train.search_weight == 0.0
    assert plain.train.minibatch_size == RunConfig().train.minibatch_size


def test_a_recipe_starts_from_its_base_and_may_name_its_game():
    cosine = run_config(recipe="tictactoe-cosine")
    assert cosine.train.lr_schedule == "cosine" and cosine.train.lr_min == 1e-5
    assert cosine.train.minibatch_size == 64  # from tictactoe, its base
    long, measured = run_config(recipe="tictactoe-long"), run_config(iterations=360)
    assert measured.recipe == "tictactoe"  # benchmarks/collapse.py's latest arm
    assert long.model_dump(exclude={"recipe"}) == measured.model_dump(exclude={"recipe"})
    kuhn = run_config(recipe="kuhn-poker")
    assert kuhn.game == "kuhn-poker" and kuhn.matches == 256
    with pytest.raises(ConfigError, match=r"is for game 'kuhn-poker'.*tictactoe"):
        run_config(recipe="kuhn-poker", game="tictactoe")


def test_an_unknown_recipe_lists_the_known_ones():
    with pytest.raises(UnknownName, match=r"Unknown recipe 'tictactoe-mix'.*tictactoe-mixed"):
        run_config(recipe="tictactoe-mix")


def test_a_recipe_that_starts_from_itself_is_refused():
    loop = Recipe("a", "", {}, base="b")
    other = Recipe("b", "", {}, base="a")
    lookup = {"a": loop, "b": other}.__getitem__
    with pytest.raises(ValueError, match="starts from itself"):
        loop.resolved(lookup)


@pytest.mark.parametrize(
    ("objective", "setting", "named"),
    [
        ("dpo", "train.kl_coef=0.1", "objective_options.kl_coef"),  # the old name, mapped
        ("sft", "objective_options.clip=0.3", "objective_options.clip"),
        ("sft", "train.entropy_coef=0.01", "objective_options.entropy_coef"),
        ("dpo", "train.reference_update=0.1", "train.reference_update"),
        ("sft", "estimator_options.decay=0", "estimator_options.decay"),
        ("legal-pg", "objective_options.clip=0.3", "objective_options.clip"),
    ],
)
def test_a_setting_the_objective_does_not_read_is_refused(objective, setting, named):
    overrides = [setting]
    if objective == "legal-pg":
        overrides.append("generation.choice=legal")
    with pytest.raises(ConfigError) as err:
        run_config(objective=objective, overrides=overrides)
    message = str(err.value)
    assert named in message and f"objective {objective!r} does not read" in message
    assert "selfplay objectives" in message


def test_an_estimator_is_refused_where_no_advantages_are_needed():
    with pytest.raises(ConfigError, match=r"estimator: objective 'dpo'.*needs no advantages"):
        run_config(objective="dpo", estimator="grpo")


def test_pg_reads_every_update_setting():
    config = run_config(
        overrides=["train.kl_coef=0.1", "train.clip=0.3", "train.entropy_coef=0.01"]
    )
    objective = bound_objective(config)
    assert objective.options.kl_coef == 0.1 and objective.options.clip == 0.3
    assert objective.options.entropy_coef == 0.01


def test_a_recipes_setting_the_objective_does_not_read_is_left_out_with_a_note():
    config = run_config(objective="dpo")  # tic-tac-toe's recipe sets train.search_weight
    assert config.train.search_weight == 0.0
    assert config.train.minibatch_size == 64  # the recipe's other settings still apply
    notes = recipe_notes(config)
    assert len(notes) == 1 and "train.search_weight=2.0" in notes[0] and "'dpo'" in notes[0]
    assert "train.search_weight" not in applied(config)
    assert resolve(config) == config


def test_an_objective_is_told_only_the_settings_it_reads():
    config = run_config(objective="sft", recipe="none")
    objective = bound_objective(config)
    assert objective.shared("kl_coef") == 0.0  # the run's default 0.05 is not sft's business
    assert "kl_coef" not in objective.options.model_dump()
    assert objective.options.update_epochs == 1
    two = bound_objective(run_config(objective="sft", overrides=["train.update_epochs=2"]))
    assert two.options.update_epochs == 2


def test_a_resumed_config_is_not_checked_again(tmp_path):
    config = run_config(objective="dpo")
    data = config.model_dump()
    data["train"]["kl_coef"] = 0.3  # a config.yaml of a run made before objectives owned keys
    resumed = RunConfig.model_validate({**data, "resume": str(tmp_path)})
    assert resolve(resumed).objective_options["kl_coef"] == 0.3  # kept, and not refused
    assert bound_objective(resolve(resumed)).shared("kl_coef") == 0.0  # dpo does not read it


def test_the_kl_coefficient_column_belongs_to_objectives_that_read_it():
    from types import SimpleNamespace

    import torch

    from selfplay.core.train.schedules import apply_schedules

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    pg = bound_objective(run_config())
    sft = bound_objective(run_config(objective="sft", recipe="none"))
    config = SimpleNamespace(train=RunConfig().train, iterations=4)
    assert set(apply_schedules(config, optimizer, pg, 1, pg.shared("kl_coef"))) == {"lr", "kl_coef"}
    assert set(apply_schedules(config, optimizer, sft, 1, sft.shared("kl_coef"))) == {"lr"}


def test_the_cli_refuses_an_unread_setting_before_any_run_folder(tmp_path):
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": ""}
    command = [sys.executable, "-m", "selfplay.core.commands.cli", "run", "--objective", "sft"]
    args = ["--set", "train.kl_coef=0.2", "--out", str(tmp_path), "--name", "x"]
    out = subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "objective 'sft' does not read" in " ".join(out.stderr.split())
    assert not (tmp_path / "x").exists()


def test_recipes_and_objectives_are_listed_with_what_they_hold():
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": ""}
    cli = [sys.executable, "-m", "selfplay.core.commands.cli"]
    out = subprocess.run([*cli, "recipes", "--json"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    assert rows["tictactoe-cosine"]["base"] == "tictactoe"
    assert rows["tictactoe-cosine"]["settings"]["train.search_weight"] == 2.0  # from its base
    out = subprocess.run([*cli, "objectives", "--json"], capture_output=True, text=True, env=env)
    reads = {row["name"]: row["reads"] for row in json.loads(out.stdout)}
    assert "objective_options.kl_coef" in reads["pg"] and "the estimator" in reads["pg"]
    assert reads["sft"] == "objective_options.update_epochs"


def benchmark_scripts(*names: str) -> list:
    """The benchmarks/ scripts ``names``, imported as modules."""
    import importlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(root))
    try:
        return [importlib.import_module(name) for name in names]
    finally:
        sys.path.remove(str(root))


def test_the_benchmarks_run_the_registered_recipes():
    """benchmarks/learning.py and objectives.py name recipes the registry holds."""
    learning, objectives = benchmark_scripts("learning", "objectives")
    known = {entry.name for entry in registries().recipes}
    assert set(learning.MEASURED) <= known
    assert {f"math-{name}" for name in objectives.RECIPES} <= known


def test_a_game_built_on_another_inherits_its_recipe_but_keeps_its_own_name(monkeypatch):
    from selfplay.games.tictactoe import TicTacToe

    class Variant(TicTacToe):
        name = "test-variant"

    entries = registries().games.entries
    monkeypatch.setitem(entries, "test-variant", Entry("test-variant", Variant, "tests"))
    config = run_config(game="test-variant")
    assert config.game == "test-variant" and config.recipe == "tictactoe"
    assert config.train.search_weight == 2.0  # the recipe applies
    assert resolve(config) == config  # and resolving again (a resume) agrees


@pytest.mark.parametrize(
    "flags",
    [
        {"learners": {"proposer": {"model": "smollm2-135m"}}},  # --learner proposer=MODEL
        {"model": "smollm2-135m"},  # the run's model, which a learner without its own plays
    ],
)
def test_a_recipes_model_options_for_a_learner_stay_with_its_model(flags):
    """A recipe's tiny sizes for a learner are left out when the user names another model,
    and the learner stays, with the recipe's other learners and settings."""
    config = run_config(recipe="proposer-solver-sums", **flags)
    assert list(config.learners) == ["proposer", "solver"]
    assert config.learners["proposer"].model_options is None
    assert config.learners["solver"].train.minibatch_size == 32
    assert not any(key.startswith("learners.proposer") for key in applied(config))
    own = run_config(recipe="proposer-solver-sums", learners={"proposer": {"model": "tiny"}})
    assert own.learners["proposer"].model_options == {"layers": 6, "hidden": 192}
