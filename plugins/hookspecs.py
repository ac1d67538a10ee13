"""The hooks a selfplay plugin may implement. Each receives a ``register`` callable.

Plugins never touch a registry themselves: the host validates, names and de-duplicates what
``register`` receives, and names the plugin in any error. Built-ins use these same hooks.
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("selfplay")
hookimpl = pluggy.HookimplMarker("selfplay")


@hookspec
def register_games(register):
    """Register Game classes: ``register(GameClass)``; the name is ``GameClass.name``."""


@hookspec
def register_game_families(register):
    """Register games named ``PREFIX:MEMBER``: ``register(prefix, family)`` (see GameFamily).

    ``family.resolve(member)`` makes the Game class only when such a name is used, so a family
    may stand for the games of an optional dependency without importing it at start-up.
    """


@hookspec
def register_rewards(register):
    """Register rewards: ``register(name, factory)``; ``factory(**options)`` makes a Reward."""


@hookspec
def register_verifiers(register):
    """Register verifiers: ``register(name, factory)``; ``factory(**options)`` makes a Verifier."""


@hookspec
def register_opponent_samplers(register):
    """Register opponent samplers: ``register(name, factory)``."""


@hookspec
def register_estimators(register):
    """Register advantage estimators: ``register(name, factory)``."""


@hookspec
def register_objectives(register):
    """Register objectives (what the update minimises): ``register(name, factory)``."""


@hookspec
def register_models(register):
    """Register model names: ``register(name, loader)``; ``loader(**options)`` makes a Policy."""


@hookspec
def register_callbacks(register):
    """Register training-loop callbacks: ``register(name, factory)``."""


@hookspec
def register_recipes(register):
    """Register named run settings: ``register(Recipe(name, description, settings))``."""


@hookspec
def register_suites(register):
    """Register evaluation suites: ``register(SuiteInstance)``; the name is ``suite.name``."""


@hookspec
def register_trackers(register):
    """Register metric trackers: ``register(name, factory)``; ``factory(folder, config,
    run_id=None, **options)`` makes a Tracker (``log(row, step)``, ``finalize(status)``)."""


@hookspec
def register_commands(register):
    """Register CLI sub-commands: ``register(name, run, help=..., add_arguments=None)``."""
