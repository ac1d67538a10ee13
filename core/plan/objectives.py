"""The run's objectives, each built once.

Planning asks a run's objective what it reads and does (the recipe settings it leaves out, the
user's it refuses, what it does with a stale sample) before any learner exists, and each
learner then trains with an objective of its own. `Objectives` builds one the first time it
is asked for and hands the same one back when it is asked again with the same options: a
question takes any objective built from those options, a learner takes the one it was given
(or one only asked so far), so a run constructs one objective per learner.

A shared algorithm setting (`TRAIN_KEYS`) that an objective's `Options` do not declare never
reaches its constructor, and `refuse_unread_shared` refuses one given to it. `bound_objective`
is a learner's objective checked against the run before any work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.objective import TRAIN_KEYS
from selfplay.core.config import RunConfig
from selfplay.core.plan.build import construct, describe_reads
from selfplay.plugins.manager import registries


@dataclass
class _Built:
    options: str  # the objective's name and constructor options, as one comparable text
    objective: Any
    learner: str | None  # the learner it was handed to; None: only asked so far


class Objectives:
    """The objectives one run builds (see the module doc)."""

    def __init__(self) -> None:
        self._built: list[_Built] = []

    def asked(self, config: RunConfig) -> Any:
        """The objective ``config`` names, to ask what it reads and does."""
        options, factory, given = _options(config)
        for built in self._built:
            if built.options == options:
                return built.objective
        return self._build(options, factory, given, config, None)

    def learner(self, config: RunConfig, learner: str) -> Any:
        """The objective that ``learner`` trains with: its own, built once."""
        options, factory, given = _options(config)
        mine = [b for b in self._built if b.options == options and b.learner == learner]
        free = [b for b in self._built if b.options == options and b.learner is None]
        if mine or free:
            chosen = (mine or free)[0]
            chosen.learner = learner
            return chosen.objective
        return self._build(options, factory, given, config, learner)

    def _build(
        self, options: str, factory: Any, given: dict[str, Any], config: RunConfig, learner: Any
    ) -> Any:
        owner = f"objective {config.objective!r}"
        objective = construct(factory, given, owner, "objective_options")
        self._built.append(_Built(options, objective, learner))
        return objective


def _options(config: RunConfig) -> tuple[str, Any, dict[str, Any]]:
    """The objective's factory and its constructor options (a shared setting its `Options`
    do not declare left out), and the two as one comparable text."""
    factory = registries().objectives.get(config.objective)
    fields = declared(factory)
    given = {
        key: value
        for key, value in config.objective_options.items()
        if key not in TRAIN_KEYS or key in fields
    }
    text = json.dumps([config.objective, given], sort_keys=True, default=repr)
    return text, factory, given


def declared(factory: Any) -> dict[str, Any]:
    """The options an objective's factory declares (its `Options`' fields; none without)."""
    return getattr(getattr(factory, "Options", None), "model_fields", {})


def refuse_unread_shared(objective: Any, config: RunConfig) -> None:
    """A shared algorithm setting given in ``objective_options`` that the objective neither
    declares nor reads would do nothing: refused (a resumed run was checked when it began)."""
    mine = declared(type(objective))
    shared = {key for key in config.objective_options if key in TRAIN_KEYS and key not in mine}
    unread = sorted(shared - set(objective.reads()))
    if unread and config.resume is None:
        raise ConfigError(
            f"objective {config.objective!r} has no option {', '.join(unread)}: it does not "
            f"read {'this setting' if len(unread) == 1 else 'these settings'}, so it would do "
            f"nothing. It reads {describe_reads(objective)}; drop it, or choose an objective "
            "that reads it (`selfplay objectives`)."
        )


def bound_objective(
    config: RunConfig, objectives: Objectives | None = None, learner: str = ""
) -> Any:
    """The objective ``learner`` trains with (``""``: the shared policy), checked against the
    run before any work: a setting it refuses (``legal-pg`` with two epochs), one it does not
    read or a ``generation.choice`` it does not train is a ConfigError before the run folder
    or the model exists. What it does with stale samples was checked when the run was
    resolved (`check_stale`)."""
    objective = (objectives or Objectives()).learner(config, learner)
    refuse_undeclared(objective, config)
    refuse_unread_shared(objective, config)
    needed = objective.generation_choice
    if needed is not None and needed != config.generation.choice:
        raise ConfigError(
            f"objective {config.objective!r} trains generation.choice={needed}, but the run "
            f"has generation.choice={config.generation.choice}; add --set "
            f"generation.choice={needed}."
        )
    return objective


def refuse_undeclared(objective: Any, config: RunConfig) -> None:
    """An objective reads its settings from its options: one that says it reads a shared
    setting its `Options` do not declare would never see it."""
    mine = declared(type(objective))
    missing = sorted(key for key in objective.reads() & set(TRAIN_KEYS) if key not in mine)
    if missing:
        raise ConfigError(
            f"objective {config.objective!r} reads {', '.join(missing)} (its reads()) but its "
            f"Options do not declare {'it' if len(missing) == 1 else 'them'}: an objective "
            "reads its settings from self.options, so declare each among its Options (e.g. "
            "`kl_coef: KLCoef = 0.05`, the types in selfplay.api.objective)."
        )
