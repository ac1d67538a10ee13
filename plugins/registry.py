"""Named registries of what plugins contribute, and the errors a user sees when a name is wrong."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

# lowercase kebab-case; a "++" suffix is allowed for names like "reinforce++"
NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*(\+\+)?$")


class PluginError(Exception):
    """A plugin could not be loaded or registered something invalid."""


class UnknownName(LookupError):
    """A name that no loaded plugin registered; the message lists what is known."""


class GameFamily(Protocol):
    """Games named ``PREFIX:MEMBER`` that a plugin makes on demand (``textarena:TicTacToe-v0``).

    A family stands for more games than are worth registering one by one, or for games of an
    optional dependency: nothing is made (or imported) until such a name is used.
    """

    def resolve(self, member: str) -> Any:
        """The Game class for ``member``; raises UnknownName/PluginError naming the problem."""

    def members(self) -> list[str]:
        """Every member name the family offers now."""


@dataclass(frozen=True, slots=True)
class Entry:
    name: str
    obj: Any
    plugin: str  # the plugin (distribution or built-in module) that registered it


@dataclass
class Registry:
    """Everything of one kind (games, rewards, ...), by lowercase kebab-case name."""

    kind: str
    entries: dict[str, Entry] = field(default_factory=dict)
    # one line per plugin that failed to load; shown when a lookup fails
    failures: list[str] = field(default_factory=list)
    # families that resolve "PREFIX:MEMBER" names which are not entries (games only)
    families: Registry | None = None
    # names that several plugins register -> those plugins, in load order
    clashes: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, obj: Any, plugin: str) -> None:
        """Add an entry. A name registered twice keeps its first entry (listings show it,
        with the clash) and becomes unusable: `get` says which plugins clash."""
        if not isinstance(name, str) or not NAME.match(name):
            raise PluginError(
                f"Plugin {plugin} registered the {self.kind} name {name!r}; names must be "
                "lowercase kebab-case such as 'kuhn-poker'."
            )
        if name in self.entries:
            self.clashes.setdefault(name, [self.entries[name].plugin]).append(plugin)
            return
        self.entries[name] = Entry(name, obj, plugin)

    def clash_message(self, name: str) -> str:
        plugins = " and ".join(self.clashes[name])
        return (
            f"Two plugins register the {self.kind} {name!r}: {plugins}. Uninstall one, or "
            "pick which load with SELFPLAY_LOAD_PLUGINS."
        )

    def get(self, name: str) -> Any:
        if name in self.clashes:
            raise PluginError(self.clash_message(name))
        entry = self.entries.get(name)
        if entry is not None:
            return entry.obj
        prefix, colon, member = name.partition(":")
        if colon and self.families is not None and prefix in self.families:
            return self.families.get(prefix).resolve(member)
        raise UnknownName(self.unknown_message(name))

    def unknown_message(self, name: str) -> str:
        known = sorted(self.entries)
        message = f"Unknown {self.kind} {name!r}."
        close = difflib.get_close_matches(name, known, n=1)
        if close:
            message += f" Did you mean {close[0]!r}?"
        message += f" Known {self.kind}s: {', '.join(known) or 'none'}."
        if self.families:
            prefixes = ", ".join(f"{entry.name}:<name>" for entry in self.families)
            message += f" Families of {self.kind}s: {prefixes}."
        if self.failures:
            message += " Plugins that failed to load: " + "; ".join(self.failures)
        return message

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries[name] for name in sorted(self.entries))

    def __len__(self) -> int:
        return len(self.entries)


KINDS = {
    "games": "game",
    "game_families": "game family",
    "rewards": "reward",
    "verifiers": "verifier",
    "opponent_samplers": "opponent sampler",
    "estimators": "estimator",
    "objectives": "objective",
    "models": "model",
    "callbacks": "callback",
    "recipes": "recipe",
    "suites": "suite",
    "trackers": "tracker",
    "commands": "command",
}


@dataclass
class Registries:
    games: Registry = field(default_factory=lambda: Registry("game"))
    game_families: Registry = field(default_factory=lambda: Registry("game family"))
    rewards: Registry = field(default_factory=lambda: Registry("reward"))
    verifiers: Registry = field(default_factory=lambda: Registry("verifier"))
    opponent_samplers: Registry = field(default_factory=lambda: Registry("opponent sampler"))
    estimators: Registry = field(default_factory=lambda: Registry("estimator"))
    objectives: Registry = field(default_factory=lambda: Registry("objective"))
    models: Registry = field(default_factory=lambda: Registry("model"))
    callbacks: Registry = field(default_factory=lambda: Registry("callback"))
    recipes: Registry = field(default_factory=lambda: Registry("recipe"))
    suites: Registry = field(default_factory=lambda: Registry("suite"))
    trackers: Registry = field(default_factory=lambda: Registry("tracker"))
    commands: Registry = field(default_factory=lambda: Registry("command"))

    def __post_init__(self) -> None:
        self.games.families = self.game_families

    def all(self) -> dict[str, Registry]:
        return {kind: getattr(self, kind) for kind in KINDS}
