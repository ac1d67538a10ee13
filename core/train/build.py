"""Turns a RunConfig's names into objects, through the registries only.

core never imports a concrete plug-in: every game, model, reward and sampler comes from a
registry lookup here, so a third-party plugin is built exactly like a built-in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from selfplay.api.game import Game
from selfplay.api.policy import Policy, ScriptedPolicy
from selfplay.api.reward import Reward, RewardOptions
from selfplay.api.sampler import LEARNER, OpponentSampler, is_snapshot
from selfplay.core.config import ConfigError, RunConfig
from selfplay.plugins.manager import registries
from selfplay.rewards.compose import GRAMMAR, Component, RewardPipeline, parse_terms


def split_spec(spec: str) -> tuple[str, str | None]:
    """``'fixed:random'`` → ``('fixed', 'random')``; ``'latest'`` → ``('latest', None)``."""
    name, _, arg = spec.partition(":")
    return name.strip(), (arg.strip() or None)


def build_game(config: RunConfig) -> Game:
    game_cls = registries().games.get(config.game)
    try:
        return game_cls(config.game_options, rules=config.invalid_moves)
    except ValidationError as err:
        problems = []
        for problem in err.errors():
            key = ".".join(str(p) for p in problem["loc"])
            if problem["type"] == "extra_forbidden":
                valid = ", ".join(sorted(game_cls.Options.model_fields))
                problems.append(f"{config.game} has no option {key!r}; its options are: {valid}.")
            else:
                problems.append(f"game_options.{key}: {problem['msg']}.")
        raise ConfigError(" ".join(problems)) from None


def build_learner(config: RunConfig) -> Policy:
    generation = config.generation.model_dump()
    options: dict[str, Any] = {"seed": config.seed, **generation, **config.model_options}
    models = registries().models
    if config.model in models:
        return models.get(config.model)(**options)
    path = Path(config.model).expanduser()
    if path.is_dir():
        from selfplay.core.models.hf_policy import HFPolicy

        try:
            return HFPolicy.from_pretrained(path, **options)
        except ImportError as err:  # an attention kernel or dtype this machine lacks
            raise ConfigError(str(err)) from None
    raise ConfigError(
        f"Model {config.model!r} is neither a registered model "
        f"({', '.join(sorted(models.entries))}) nor a local Hugging Face model folder. "
        "Nothing is downloaded at run time: pass a folder."
    )


def build_sampler(config: RunConfig) -> OpponentSampler:
    name, arg = split_spec(config.opponent)
    factory = registries().opponent_samplers.get(name)
    options = config.opponent_options
    try:
        return factory(arg, **options) if arg is not None else factory(**options)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"--opponent {config.opponent}: {err}") from None


def build_estimator(config: RunConfig) -> Any:
    factory = registries().estimators.get(config.estimator)
    try:
        return factory(**config.estimator_options)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"estimator {config.estimator!r}: {err}") from None


def build_callbacks(config: RunConfig) -> list[Any]:
    stray = sorted(set(config.callback_options) - set(config.callbacks))
    if stray:
        raise ConfigError(
            f"callback_options has {', '.join(map(repr, stray))}, which is not in callbacks "
            f"{config.callbacks}; remove the options or add the callback."
        )
    callbacks = []
    for name in config.callbacks:
        factory = registries().callbacks.get(name)
        try:
            callbacks.append(factory(**config.callback_options.get(name, {})))
        except (TypeError, ValueError) as err:
            raise ConfigError(f"callback {name!r}: {err}") from None
    return callbacks


def build_reward(config: RunConfig, game: Game) -> RewardPipeline:
    """The pipeline of ``config.reward`` (grammar in rewards/compose.py), roles checked.

    A reward's options are the game's ``reward_defaults`` for it, overridden by
    ``reward_options``, overridden by the term's own options.
    """
    terms = parse_terms(config.reward)
    names = {term.name for term in terms}
    stray = sorted(set(config.reward_options) - names)
    if stray:
        raise ConfigError(
            f"reward_options has {', '.join(map(repr, stray))}, which the reward "
            f"{config.reward!r} does not use; remove it or add the reward."
        )
    components = []
    for term in terms:
        if term.role is not None and term.role not in game.roles:
            raise ConfigError(
                f"Reward term {term.label!r}: {game.name} has no role {term.role!r}; its roles "
                f"are: {', '.join(game.roles)}. {GRAMMAR[0].upper()}{GRAMMAR[1:]}."
            )
        options = {
            **game.reward_defaults.get(term.name, {}),
            **config.reward_options.get(term.name, {}),
            **term.options,
        }
        components.append(Component(term, _make_reward(term.name, options)))
    return RewardPipeline(components, game.roles, mode=config.reward_mode)


def _make_reward(name: str, options: dict[str, Any]) -> Reward:
    factory = registries().rewards.get(name)
    try:
        return factory(**options)
    except ValidationError as err:
        valid = ", ".join(sorted(getattr(factory, "Options", RewardOptions).model_fields))
        problems = [
            f"reward {name!r} has no option {'.'.join(map(str, p['loc']))!r}; its options are: "
            f"{valid or 'none'}."
            if p["type"] == "extra_forbidden"
            else f"reward_options.{name}.{'.'.join(map(str, p['loc']))}: {p['msg']}."
            for p in err.errors()
        ]
        raise ConfigError(" ".join(problems)) from None
    except TypeError as err:
        raise ConfigError(f"reward {name!r} takes no options {sorted(options)}: {err}") from None


@dataclass
class Seats:
    """Resolves seat-holder names from samplers into policies (scripted ones made once).

    Snapshot names go to ``snapshots``, which loads pool members on demand.
    """

    learner: Policy
    game: Game
    snapshots: Callable[[str], Policy] | None = None

    def __post_init__(self) -> None:
        self._cache: dict[str, Policy] = {LEARNER: self.learner}

    def policy(self, holder: str) -> Policy:
        if is_snapshot(holder) and self.snapshots is not None:
            return self.snapshots(holder)
        if holder not in self._cache:
            kind, _, player = holder.partition(":")
            if kind != "scripted" or player not in self.game.players:
                known = ", ".join(sorted(self.game.players)) or "none"
                raise ConfigError(
                    f"Unknown seat holder {holder!r} for {self.game.name}; "
                    f"scripted players: {known}."
                )
            self._cache[holder] = ScriptedPolicy(player)
        return self._cache[holder]


__all__ = [
    "Seats",
    "build_callbacks",
    "build_estimator",
    "build_game",
    "build_learner",
    "build_reward",
    "build_sampler",
    "split_spec",
]
