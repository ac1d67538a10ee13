"""The settings a run trains with: the user's, over a recipe's, over the defaults.

    resolve(config):  the recipe (``--recipe``, else the game's own) fills in what the user
                      did not set -> the objective's settings checked -> the game's default
                      reward and the game options the objective needs (STaR's hinted retries)

What the user set is what pydantic saw given, at every level (``--set``, flags, a file, or a
resumed run's config.yaml, which gives every key, so resolving again changes nothing). A
recipe's options of a plug-in (``estimator_options.per_state``) are left out when the user
chose another plug-in (``--estimator grpo``): they belong to the one the recipe uses.

An objective owns its settings (`Objective.reads`, core/plan/ownership.py): a setting it does
not read would do nothing, so one the user gave is refused, naming the objective
(core/plan/checks.py), and one a recipe gave is left out and named in the run's banner
(`recipe_notes`).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from selfplay.api.errors import ConfigError
from selfplay.api.objective import TRAIN_KEYS
from selfplay.api.recipe import NO_RECIPE, Recipe
from selfplay.core.config import RunConfig
from selfplay.core.config.learners import learner_config, served
from selfplay.core.config.sections import MOVED, moved_key
from selfplay.core.plan.build import reward_expression
from selfplay.core.plan.checks import (
    check_given,
    check_learner_settings,
    check_schedules,
    check_stale,
)
from selfplay.core.plan.config_loader import explain
from selfplay.core.plan.objectives import Objectives
from selfplay.core.plan.ownership import asked_objective, unread_settings
from selfplay.plugins.manager import registries


def resolve(config: RunConfig, objectives: Objectives | None = None) -> RunConfig:
    """The config a run trains with (see the module doc). Idempotent, so a resume agrees.
    The objectives it asks are built in ``objectives`` (a run's plan keeps them)."""
    objectives = objectives or Objectives()
    given = config.model_dump(exclude_unset=True)
    recipe = chosen_recipe(config)
    settings = recipe_settings(recipe, given, named=_named(config)) if recipe else {}
    config = _with(config, settings, given, recipe)
    objective = objectives.asked(config)
    unread = unread_settings(objective, settings)
    if unread:  # a recipe's settings the objective does not read: left out
        kept = {key: value for key, value in settings.items() if key not in unread}
        config = _with(RunConfig.model_validate(given), kept, given, recipe)
    check_given(objective, config, _flat(given))
    check_learner_settings(config, objectives)
    check_schedules(config)
    for name in config.learners or [None]:  # what each objective does with stale samples
        mine = learner_config(config, name) if name else config
        check_stale(mine, objectives.asked(mine) if name else objective)
    update: dict[str, Any] = {"recipe": recipe.name if recipe else NO_RECIPE}
    game_cls = registries().games.get(config.game)
    update["reward"] = reward_expression(config, game_cls)
    needed = objective.game_options()
    if needed:
        update["game_options"] = _game_options(config, game_cls, needed)
    if served(config) and config.rollout.max_staleness:  # the correction it chose, recorded
        chosen = objective.stale_options()
        if chosen:
            update["objective_options"] = {**config.objective_options, **chosen}
    return config.model_copy(update=update)


def chosen_recipe(config: RunConfig) -> Recipe | None:
    """The recipe ``config`` names, else its game's own; None for ``--recipe none``."""
    name = config.recipe
    if name is None:
        name = getattr(registries().games.get(config.game), "recipe", None)
    if name is None or name == NO_RECIPE:
        return None
    return registries().recipes.get(name)


def recipe_settings(recipe: Recipe, given: dict[str, Any], named: bool = True) -> dict[str, Any]:
    """The recipe's settings that apply next to the settings ``given`` (dotted keys).

    A recipe that names its game is refused beside another ``--game`` when the user ``named``
    it; a game's own recipe (inherited by a game built on it) keeps the run's game."""
    every = recipe.resolved(registries().recipes.get)
    mine = given.get("game")
    if not named:
        every.pop("game", None)
    if "game" in every and mine is not None and mine != every["game"]:
        raise ConfigError(
            f"--recipe {recipe.name} is for game {every['game']!r}, and the run's game is "
            f"{mine!r}; drop --game, or choose a recipe for {mine} (`selfplay recipes`)."
        )
    dropped = {key for key in every if _for_another(key, every, given)}
    kept: dict[str, Any] = {}
    for key, value in every.items():
        if key not in dropped:
            kept[key] = value
            continue
        # a learner the recipe names stays, with its other settings and the user's model
        learner = ".".join(key.split(".")[:2])
        if learner.startswith("learners.") and all(
            k in dropped for k in every if k.startswith(learner + ".")
        ):
            kept.setdefault(learner, {})
    return kept


def _for_another(key: str, every: dict[str, Any], given: dict[str, Any]) -> bool:
    """Whether ``key`` is a recipe's ``PLUGIN_options`` setting (the run's, or a learner's:
    ``learners.NAME.model_options``) where the user chose another PLUGIN than the recipe's:
    a tiny model's sizes do not fit the model the user named. game_options belong to the
    recipe's game, so they always stay."""
    parts = key.split(".")
    at = next((i for i, part in enumerate(parts) if part.endswith("_options")), None)
    if at is None or at not in (0, 2) or (at == 2 and parts[0] != "learners"):
        return False
    plugin = parts[at].removesuffix("_options")
    if plugin == "game" or plugin not in RunConfig.model_fields:
        return False  # (callback_options and logger_options belong to no one chosen plug-in)
    if plugin == "objective" and parts[-1] in TRAIN_KEYS:
        return False  # a shared algorithm setting: kept for any objective that reads it
    mine = given.get(plugin)  # a learner without its own PLUGIN has the run's
    theirs = every.get(plugin, RunConfig.model_fields[plugin].default)
    if at == 2:
        learner = given.get("learners", {}).get(parts[1]) or {}
        mine = learner.get(plugin) or mine
        theirs = every.get(f"learners.{parts[1]}.{plugin}") or theirs
    return mine is not None and mine != theirs


def applied(config: RunConfig, objectives: Objectives | None = None) -> dict[str, Any]:
    """The recipe's settings this resolved run trains with, and their values (for the banner)."""
    return {key: trained for key, (trained, _) in _recipe_keys(config, objectives).items()}


def banner_settings(
    config: RunConfig, objectives: Objectives | None = None
) -> tuple[dict[str, Any], dict[str, tuple[Any, Any]]]:
    """For the banner: the recipe's settings the run trains with (the recipe's values), and
    those the user set otherwise (``{key: (the run's value, the recipe's)}``), so that a user's
    ``--iterations 2`` is not shown as the recipe's own."""
    kept, changed = {}, {}
    for key, (trained, theirs) in _recipe_keys(config, objectives).items():
        if _agrees(trained, theirs):
            kept[key] = theirs
        else:
            changed[key] = (_like(trained, theirs), theirs)
    return kept, changed


def _agrees(trained: Any, theirs: Any) -> bool:
    """Whether the run's value is the recipe's; a recipe's section (``learners.NAME.train:
    {minibatch_size: 32}``) agrees when each key it sets does."""
    if isinstance(theirs, dict) and isinstance(trained, dict):
        return all(_agrees(trained.get(k), v) for k, v in theirs.items())
    return trained == theirs


def _like(trained: Any, theirs: Any) -> Any:
    """The run's value cut to the keys the recipe's section sets, to show beside it."""
    if isinstance(theirs, dict) and isinstance(trained, dict):
        return {k: _like(trained.get(k), v) for k, v in theirs.items()}
    return trained


def _recipe_keys(
    config: RunConfig, objectives: Objectives | None = None
) -> dict[str, tuple[Any, Any]]:
    """Each recipe setting that applies to this resolved run: (the run's value, the recipe's)."""
    recipe = chosen_recipe(config)
    if recipe is None:
        return {}
    settings = config.model_dump()
    objective = asked_objective(config, objectives)
    unread = unread_settings(objective, recipe.resolved(registries().recipes.get))
    out = {}
    for key, value in recipe_settings(recipe, settings, named=_named(config)).items():
        # the banner's first line names the game; {} is a learner kept without its settings
        if key in unread or key == "game" or value == {}:
            continue
        now = moved_key(key)
        node: Any = settings
        for part in now.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None and now != key and value == MOVED[now.rsplit(".", 1)[1]]:
            node = value  # an old default is dropped as it moves: the objective's is the same
        out[now] = (node, value)
    return out


def recipe_line(config: RunConfig, objectives: Objectives | None = None) -> str:
    """The banner's line of the recipe's settings: those the run trains with, then those the
    user set otherwise, each with the recipe's value ("" without a recipe)."""
    kept, changed = banner_settings(config, objectives)
    if not kept and not changed:
        return ""
    shown = " ".join(f"{key}={json.dumps(value)}" for key, value in kept.items())
    line = f"recipe {config.recipe} (set any key to change it; --recipe none): {shown}".rstrip()
    if changed:
        yours = " ".join(
            f"{k}={json.dumps(mine)} (recipe: {json.dumps(theirs)})"
            for k, (mine, theirs) in changed.items()
        )
        line += f"; yours instead: {yours}"
    return line


def recipe_notes(config: RunConfig, objectives: Objectives | None = None) -> list[str]:
    """What the banner says of the recipe's settings that the objective does not read."""
    recipe = chosen_recipe(config)
    if recipe is None:
        return []
    every = recipe_settings(recipe, config.model_dump(exclude_unset=True), named=_named(config))
    unread = sorted(unread_settings(asked_objective(config, objectives), every))
    if not unread:
        return []
    named = ", ".join(f"{key}={every[key]}" for key in unread)
    return [
        f"recipe {recipe.name} sets {named}, which objective {config.objective!r} does not "
        "read; left out."
    ]


def _named(config: RunConfig) -> bool:
    """Whether the run's recipe is one the user chose, rather than its game's own."""
    own = getattr(registries().games.get(config.game), "recipe", None)
    return config.recipe is not None and config.recipe != own


def _with(
    config: RunConfig, settings: dict[str, Any], given: dict[str, Any], recipe: Recipe | None
) -> RunConfig:
    """``config`` with ``settings`` (dotted keys) wherever ``given`` sets nothing."""
    if not settings:
        return config
    data: dict[str, Any] = {}
    for key, value in settings.items():
        *sections, last = key.split(".")
        node = data
        for part in sections:
            node = node.setdefault(part, {})
        node[last] = value
    try:
        return RunConfig.model_validate(_under(data, given))
    except ValidationError as err:
        name = recipe.name if recipe else "?"
        raise ConfigError(
            f"The settings of recipe {name!r} do not fit: {explain(err)} This is the recipe's "
            "own bug: report it to its author, set the key yourself, or run --recipe none."
        ) from None


def _game_options(config: RunConfig, game_cls: Any, needed: dict[str, Any]) -> dict[str, Any]:
    """The game options with those the objective needs, checked against the game's."""
    options = dict(config.game_options)
    fields = getattr(game_cls, "Options", None)
    for key, value in needed.items():
        if fields is None or key not in fields.model_fields:
            raise ConfigError(
                f"objective {config.objective!r} with these objective_options needs the "
                f"game option {key}={value!r}, which {config.game} does not have; use a "
                "game that offers it (e.g. math-solver)."
            )
        if key in options and options[key] != value:
            raise ConfigError(
                f"game_options.{key}={options[key]!r} contradicts objective "
                f"{config.objective!r}, which needs {key}={value!r}; drop one of them."
            )
        options[key] = value
    return options


def _flat(given: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys (``{"train": {"lr": 1}}`` -> ``{"train.lr": 1}``)."""
    flat: dict[str, Any] = {}
    for key, value in given.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))  # an empty section sets nothing
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _under(defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``given`` over ``defaults``, section by section."""
    merged = dict(defaults)
    for key, value in given.items():
        below = merged.get(key)
        both = isinstance(below, dict) and isinstance(value, dict)
        merged[key] = _under(below, value) if both else value
    return merged
