"""Discovers plugins (built-ins, then the ``selfplay`` entry-point group); fills the registries.

Environment:
- ``SELFPLAY_LOAD_PLUGINS``: comma-separated distribution or entry-point names to load; empty
  loads no third-party plugin. Unset loads every installed one. Built-ins always load.
- ``SELFPLAY_STRICT_PLUGINS=1``: a plugin that fails to import or whose hook raises re-raises
  instead of being reported in one line and skipped.

A broken plugin never breaks the commands that do not need it: a failed import or hook, a
misspelt hook name and two plugins registering one name are each one warning line, and
`selfplay plugins` shows them; only a run that needs the clashing name stops (exit code 2).

Pluggy is used for discovery at start-up only; nothing here runs per iteration.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from selfplay.plugins import hookspecs
from selfplay.plugins.builtins import DEFAULT_PLUGINS
from selfplay.plugins.registry import KINDS, PluginError, Registries

GROUP = "selfplay"


@dataclass(frozen=True)
class Command:
    name: str
    run: Callable[[Any], int | None]
    help: str = ""
    add_arguments: Callable[[Any], None] | None = None


@dataclass
class PluginInfo:
    """What `selfplay plugins` shows for one plugin."""

    name: str
    version: str
    entry_point: str
    builtin: bool
    registered: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)  # misspelt hooks, name clashes


@dataclass
class PluginSet:
    registries: Registries
    plugins: list[PluginInfo]


_loaded: PluginSet | None = None


def registries() -> Registries:
    """The registries, loading plugins on first use."""
    return load().registries


def load() -> PluginSet:
    global _loaded
    if _loaded is None:
        _loaded = _discover()
    return _loaded


def reset() -> None:
    """Forget loaded plugins (tests change SELFPLAY_LOAD_PLUGINS between cases)."""
    global _loaded
    _loaded = None


def _strict() -> bool:
    return os.environ.get("SELFPLAY_STRICT_PLUGINS", "") not in ("", "0")


def _wanted() -> set[str] | None:
    raw = os.environ.get("SELFPLAY_LOAD_PLUGINS")
    if raw is None:
        return None
    return {_normalise(part) for part in raw.split(",") if part.strip()}


def _normalise(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _failure(info: PluginInfo, err: BaseException) -> str:
    info.error = f"{type(err).__name__}: {err}"
    line = f"{info.name} {info.version} (entry point {info.entry_point}): {info.error}"
    if _strict():
        raise err
    print(f"warning: selfplay plugin failed to load: {line}", file=sys.stderr)
    return line


def _discover() -> PluginSet:
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    plugins: dict[str, PluginInfo] = {}  # by the name registered with pluggy
    failures: list[str] = []
    version = metadata.version("selfplay-rl") if _installed() else "dev"
    for module_name in DEFAULT_PLUGINS:
        info = plugins[module_name] = PluginInfo(module_name, version, module_name, builtin=True)
        try:
            pm.register(importlib.import_module(module_name), name=module_name)
        except Exception as err:
            failures.append(_failure(info, err))
    wanted = _wanted()
    for ep in metadata.entry_points(group=GROUP):
        dist = ep.dist.name if ep.dist else ep.name
        if wanted is not None and not ({_normalise(dist), _normalise(ep.name)} & wanted):
            continue
        dist_version = ep.dist.version if ep.dist else "?"
        key = f"{dist}:{ep.name}"
        info = plugins[key] = PluginInfo(dist, dist_version, f"{ep.name} = {ep.value}", False)
        try:
            pm.register(ep.load(), name=key)
        except Exception as err:
            failures.append(_failure(info, err))
    _check_hooks(pm, plugins)
    regs = Registries()
    for kind in KINDS:
        for impl in getattr(pm.hook, f"register_{kind}").get_hookimpls():
            info = plugins[impl.plugin_name]
            if info.error:
                continue
            try:
                impl.function(register=_register_for(kind, regs, info))
            except Exception as err:
                failures.append(_failure(info, err))
    for registry in regs.all().values():
        registry.failures = failures
    _report_clashes(regs, plugins)
    return PluginSet(regs, list(plugins.values()))


def _warn(info: PluginInfo, text: str) -> None:
    if _strict():
        raise PluginError(text)
    info.warnings.append(text)
    print(f"warning: {text}", file=sys.stderr)


def _check_hooks(pm: pluggy.PluginManager, plugins: dict[str, PluginInfo]) -> None:
    """One warning per hook implementation whose name is not a selfplay hook (a typo)."""
    known = [name for name, caller in vars(pm.hook).items() if caller.has_spec()]
    for name, caller in sorted(vars(pm.hook).items()):
        if caller.has_spec():
            continue
        for impl in caller.get_hookimpls():
            if impl.opts.get("optionalhook"):
                continue
            info = plugins[impl.plugin_name]
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            _warn(
                info,
                f"selfplay plugin {info.name} {info.version}: {name!r} is not a selfplay "
                f"hook{hint}, so it is ignored; the plugin's other hooks work.",
            )


def _report_clashes(regs: Registries, plugins: dict[str, PluginInfo]) -> None:
    """One warning per name that several plugins register; the run needing it stops."""
    labels = {_label(info): info for info in plugins.values()}
    for registry in regs.all().values():
        for name, owners in registry.clashes.items():
            info = labels.get(owners[-1]) or next(iter(plugins.values()))
            _warn(info, registry.clash_message(name) + " A run that needs it stops until then.")


def _label(info: PluginInfo) -> str:
    return info.name if info.builtin else f"{info.name} {info.version}"


def _register_for(kind: str, regs: Registries, info: PluginInfo) -> Callable[..., None]:
    registry = getattr(regs, kind)
    label = _label(info)

    def record(name: str, obj: Any) -> None:
        registry.add(name, obj, label)
        info.registered.setdefault(kind, []).append(name)

    if kind == "games":

        def register_game(game_cls: Any) -> None:
            _check_game_class(game_cls, label)
            record(game_cls.name, game_cls)

        return register_game
    if kind == "recipes":

        def register_recipe(recipe: Any) -> None:
            _check_recipe(recipe, label)
            record(recipe.name, recipe)

        return register_recipe
    if kind == "suites":

        def register_suite(suite: Any) -> None:
            _check_suite(suite, label)
            record(suite.name, suite)

        return register_suite
    if kind == "commands":

        def register_command(name: str, run: Callable, help: str = "", add_arguments=None) -> None:
            record(name, Command(name, run, help, add_arguments))

        return register_command
    return record


def _check_game_class(game_cls: Any, plugin: str) -> None:
    from selfplay.api.game import Game

    if not (isinstance(game_cls, type) and issubclass(game_cls, Game)):
        raise PluginError(f"Plugin {plugin} registered {game_cls!r}, which is not a Game subclass.")
    for attr in ("name", "roles", "description"):
        if not hasattr(game_cls, attr):
            raise PluginError(f"Plugin {plugin}: game class {game_cls.__name__} has no {attr!r}.")


def _check_recipe(recipe: Any, plugin: str) -> None:
    from selfplay.api.recipe import Recipe

    if not isinstance(recipe, Recipe):
        raise PluginError(f"Plugin {plugin} registered {recipe!r} as a recipe; pass a Recipe.")
    bad = [key for key in recipe.settings if not isinstance(key, str) or not key.strip()]
    if bad:
        raise PluginError(f"Plugin {plugin}: recipe {recipe.name!r} has setting keys {bad!r}.")


def _check_suite(suite: Any, plugin: str) -> None:
    from selfplay.api.tasks import Suite

    if not isinstance(suite, Suite):
        raise PluginError(f"Plugin {plugin} registered {suite!r} as a suite; pass a Suite.")
    for attr in ("name", "description", "games"):
        if not hasattr(suite, attr):
            raise PluginError(f"Plugin {plugin}: suite {type(suite).__name__} has no {attr!r}.")


def _installed() -> bool:
    try:
        metadata.version("selfplay-rl")
    except metadata.PackageNotFoundError:
        return False
    return True
