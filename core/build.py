"""Turns a RunConfig's names into objects, through the registries only.

core never imports a concrete plug-in: every game, model, reward and sampler comes from a
registry lookup here, so a third-party plugin is built exactly like a built-in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from selfplay.core.config import ConfigError, RunConfig
from selfplay.core.policy import Policy, ScriptedPolicy
from selfplay.games.base import Game
from selfplay.opponents.base import LEARNER, OpponentSampler
from selfplay.plugins.manager import registries
from selfplay.rewards.base import Reward


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
        from selfplay.core.hf_policy import HFPolicy

        return HFPolicy.from_pretrained(path, **options)
    raise ConfigError(
        f"Model {config.model!r} is neither a registered model "
        f"({', '.join(sorted(models.entries))}) nor a local Hugging Face model folder. "
        "Nothing is downloaded at run time: pass a folder."
    )


def build_sampler(config: RunConfig) -> OpponentSampler:
    name, arg = split_spec(config.opponent)
    factory = registries().opponent_samplers.get(name)
    try:
        return factory(arg) if arg is not None else factory()
    except (TypeError, ValueError) as err:
        raise ConfigError(f"--opponent {config.opponent}: {err}") from None


def build_estimator(config: RunConfig) -> Any:
    factory = registries().estimators.get(config.estimator)
    try:
        return factory(**config.estimator_options)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"estimator {config.estimator!r}: {err}") from None


def build_callbacks(config: RunConfig) -> list[Any]:
    return [registries().callbacks.get(name)() for name in config.callbacks]


def build_reward(config: RunConfig) -> Reward:
    return registries().rewards.get(config.reward)()


@dataclass
class Seats:
    """Resolves seat-holder names from samplers into policies (scripted ones made once)."""

    learner: Policy
    game: Game

    def __post_init__(self) -> None:
        self._cache: dict[str, Policy] = {LEARNER: self.learner}

    def policy(self, holder: str) -> Policy:
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
