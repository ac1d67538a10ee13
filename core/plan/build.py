"""Turns a RunConfig's names into objects, through the registries only.

core never imports a concrete plug-in: every game, model, reward, sampler, estimator,
objective and callback comes from a registry lookup here, so a third-party plugin is built
exactly like a built-in. Every plug-in's options are validated by its ``Options`` class, and
every mistake is a ConfigError naming the option and its valid form, raised before any work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from selfplay.api.errors import ConfigError
from selfplay.api.game import Game
from selfplay.api.options import explain
from selfplay.api.reward import Reward
from selfplay.api.sampler import OpponentSampler
from selfplay.core.config import RunConfig
from selfplay.core.models.loading import build_learner
from selfplay.core.reward_pipeline import GRAMMAR, Component, RewardPipeline, parse_terms
from selfplay.plugins.manager import registries


def split_spec(spec: str) -> tuple[str, str | None]:
    """``'fixed:random'`` → ``('fixed', 'random')``; ``'latest'`` → ``('latest', None)``."""
    name, _, arg = spec.partition(":")
    return name.strip(), (arg.strip() or None)


def construct(
    factory: Callable[..., Any],
    options: dict[str, Any],
    owner: str,
    section: str,
    arg: str | None = None,
    flag: str = "",
) -> Any:
    """``factory(**options)``, with ``NAME:ARG``'s argument as its ``positional`` option.

    A bad option becomes a ConfigError that names it (`selfplay.api.options.explain`).
    """
    options = dict(options)
    if arg is not None:
        field = getattr(factory, "positional", None)
        if field is None:
            raise ConfigError(
                f"{flag or owner} takes no argument after ':' (got {arg!r}); set its options "
                f"in {section} instead."
            )
        options[field] = arg
    try:
        return factory(**options)
    except ValidationError as err:
        model = getattr(factory, "Options", None)
        fields = model.model_fields if model is not None else ()
        where = f"{flag}: " if flag else ""
        raise ConfigError(where + explain(err, owner, section, fields)) from None
    except ConfigError:
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{flag or owner}: {err}") from None


class Verifiers:
    """The run's verifiers by (name, options), each made once and shared by the run's games."""

    def __init__(self) -> None:
        self.made: dict[str, Any] = {}

    def __call__(self, name: str, options: dict[str, Any]) -> Any:
        key = f"{name}:{sorted(options.items())}"
        if key not in self.made:
            factory = registries().verifiers.get(name)
            owner = f"verifier {name!r}"
            self.made[key] = construct(factory, options, owner, "game_options.verifier_options")
        return self.made[key]


def build_game(config: RunConfig, verifiers: Verifiers | None = None) -> Game:
    game_cls = registries().games.get(config.game)
    context = {}
    if getattr(game_cls, "uses_verifier", False):
        context["verifiers"] = verifiers or Verifiers()
    try:
        return game_cls(config.game_options, rules=config.invalid_moves, **context)
    except ValidationError as err:
        fields = game_cls.Options.model_fields
        raise ConfigError(explain(err, config.game, "game_options", fields)) from None


def build_sampler(config: RunConfig, game: Game | None = None) -> OpponentSampler:
    name, arg = split_spec(config.opponent)
    factory = registries().opponent_samplers.get(name)
    owner = f"opponent {name!r}"
    flag = f"--opponent {config.opponent}"
    sampler = construct(factory, config.opponent_options, owner, "opponent_options", arg, flag)
    if game is not None and hasattr(sampler, "check"):
        sampler.check(game)
    return sampler


def build_estimator(config: RunConfig) -> Any:
    factory = registries().estimators.get(config.estimator)
    owner = f"estimator {config.estimator!r}"
    return construct(factory, config.estimator_options, owner, "estimator_options")


def describe_reads(objective: Any) -> str:
    """``objective_options.update_epochs, ... and the estimator``, for messages and lists."""
    names = [f"objective_options.{name}" for name in sorted(objective.reads())]
    if objective.needs == "advantages":
        names.append("the estimator")
    return ", ".join(names) or "no update setting"


def build_callbacks(config: RunConfig) -> list[tuple[str, Any]]:
    stray = sorted(set(config.callback_options) - set(config.callbacks))
    if stray:
        raise ConfigError(
            f"callback_options has {', '.join(map(repr, stray))}, which is not in callbacks "
            f"{config.callbacks}; remove the options or add the callback."
        )
    twice = sorted({name for name in config.callbacks if config.callbacks.count(name) > 1})
    if twice:
        raise ConfigError(f"callbacks lists {', '.join(map(repr, twice))} more than once.")
    callbacks = []
    for name in config.callbacks:
        factory = registries().callbacks.get(name)
        options = config.callback_options.get(name, {})
        callbacks.append((name, construct(factory, options, name, f"callback_options.{name}")))
    return callbacks


def build_reward(config: RunConfig, game: Game) -> RewardPipeline:
    """The pipeline of ``config.reward`` (grammar in core/reward_pipeline.py), roles checked.

    A reward's options are the game's ``reward_defaults`` for it, overridden by
    ``reward_options``, overridden by the term's own options.
    """
    reward = reward_expression(config, game)
    terms = parse_terms(reward)
    names = {term.name for term in terms}
    stray = sorted(set(config.reward_options) - names)
    if stray:
        raise ConfigError(
            f"reward_options has {', '.join(map(repr, stray))}, which the reward "
            f"{reward!r} does not use; remove it or add the reward."
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


def reward_expression(config: RunConfig, game: Any) -> Any:
    """The run's reward: ``--reward``, else the game's own (`Game.default_reward`)."""
    if config.reward is not None:
        return config.reward
    return getattr(game, "default_reward", "outcome")


def _make_reward(name: str, options: dict[str, Any]) -> Reward:
    factory = registries().rewards.get(name)
    return construct(factory, options, f"reward {name!r}", f"reward_options.{name}")


__all__ = [
    "Verifiers",
    "build_callbacks",
    "build_estimator",
    "build_game",
    "build_learner",
    "build_reward",
    "build_sampler",
    "construct",
    "reward_expression",
    "split_spec",
]
