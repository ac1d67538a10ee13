"""OpenSpiel's side of the adapter: loading a game by name, positions by history, chance, labels.

Nothing here imports ``pyspiel`` until a game is named (``pyspiel()``), so the optional extra
costs nothing when unused. OpenSpiel states are mutable C++ objects; ours are JSON values, so a
position is named by its history (every action applied so far, chance outcomes included) and
rebuilt from the nearest cached prefix (`Positions`). Chance outcomes are drawn when a match
reaches a chance node, from a generator seeded by the match's own seed and the history's
length (`draw_chance`), so a match replays from its seed on any game object.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import random
import re
import sys
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from selfplay.plugins.registry import PluginError, UnknownName

INSTALL_HINT = 'pip install "selfplay-rl[openspiel]" (or: pip install open_spiel)'
CACHE_SIZE = 4096  # cached positions per game object; a miss costs a replay, not a wrong answer
# A game string as OpenSpiel reads it: a short name, optionally (key=value, ...); nested
# parameters (a game inside a game) are passed through to OpenSpiel's own parser.
GAME_STRING = re.compile(r"^([a-z0-9_]+)(\(.*\))?$", re.DOTALL)
LABEL_CHARS = 40  # the longest action text the answer pattern reads


def pyspiel() -> Any:
    """The pyspiel module, or a PluginError that names the pip command."""
    try:
        import pyspiel
    except ImportError:
        raise PluginError(f"OpenSpiel games need the optional extra: {INSTALL_HINT}.") from None
    return pyspiel


@contextlib.contextmanager
def native_stderr_quiet() -> Iterator[None]:
    """OpenSpiel's C++ prints ``OpenSpiel exception: ...`` on the process's own stderr before
    it raises ``SpielError``; around a call whose error is expected and handled (a probe of what
    a game can do), that line is kept off the user's terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def playable_names() -> list[str]:
    """Short names of the installed OpenSpiel's games with turns (sequential or simultaneous);
    mean-field games are left out."""
    spiel = pyspiel()
    kinds = (spiel.GameType.Dynamics.SEQUENTIAL, spiel.GameType.Dynamics.SIMULTANEOUS)
    return sorted(g.short_name for g in spiel.registered_games() if g.dynamics in kinds)


def load(member: str) -> Any:
    """The OpenSpiel game for ``member`` (``leduc_poker`` or ``leduc_poker(players=2)``), turned
    sequential when its players move simultaneously; UnknownName/PluginError otherwise."""
    spiel = pyspiel()
    found = GAME_STRING.match(member.strip())
    short = found.group(1) if found else member
    names = [g.short_name for g in spiel.registered_games()]
    if found is None or short not in names:
        close = difflib.get_close_matches(short, names, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownName(
            f"OpenSpiel has no game {member!r}.{hint} List them with `selfplay games "
            "--openspiel`; name one as openspiel:NAME or openspiel:NAME(param=value,...)."
        )
    if short not in playable_names():
        raise PluginError(f"OpenSpiel game {short!r} has no turns to play (a mean-field game).")
    try:
        with native_stderr_quiet():  # the error's text is ours to show, once, below
            game = spiel.load_game(member.strip())
    except spiel.SpielError as err:
        raise PluginError(f"OpenSpiel could not load {member!r}: {err}") from None
    if game.get_type().dynamics == spiel.GameType.Dynamics.SIMULTANEOUS:
        game = spiel.convert_to_turn_based(game)
    if game.num_players() < 1:
        raise PluginError(f"OpenSpiel game {member!r} has no players.")
    return game


def draw_chance(spiel_state: Any, seed: int, step: int) -> int:
    """The outcome of a chance node, from the match's chance seed and the history's length."""
    outcomes = spiel_state.chance_outcomes()
    rng = random.Random(f"openspiel-chance:{seed}:{step}")
    actions = [a for a, _ in outcomes]
    return rng.choices(actions, weights=[p for _, p in outcomes])[0]


def labels(spiel_state: Any, player: int) -> dict[str, int]:
    """Each legal action's text (``state.action_to_string``) -> its id, in OpenSpiel's order.

    A text the answer format cannot hold (brackets or a line break, longer than 40 characters,
    empty, outside ASCII (games/move_names.py), or two actions sharing one text) is replaced,
    for every action of the state, by the action's number, so each legal action has exactly
    one answer.
    """
    actions = spiel_state.legal_actions(player)
    texts = [" ".join(spiel_state.action_to_string(player, a).split()) for a in actions]
    readable = all(
        text and text.isascii() and len(text) <= LABEL_CHARS and not set(text) & set("[]")
        for text in texts
    )
    if not readable or len({t.lower() for t in texts}) != len(texts):
        texts = [str(a) for a in actions]
    return dict(zip(texts, actions, strict=True))


class Positions:
    """OpenSpiel states by history: cached, or rebuilt from the nearest cached prefix."""

    def __init__(self, game: Any, size: int = CACHE_SIZE) -> None:
        self.game = game
        self.size = size
        self._cache: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    def at(self, history: tuple[int, ...]) -> Any:
        """The state after ``history`` (shared: never to be changed; clone it first)."""
        found = self._cache.get(history)
        if found is not None:
            self._cache.move_to_end(history)
            return found
        start = len(history)
        while start > 0 and history[:start] not in self._cache:
            start -= 1
        base = self._cache.get(history[:start])
        state = base.clone() if base is not None else self.game.new_initial_state()
        for action in history[start:]:
            state.apply_action(action)
        self._cache[history] = state
        if len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return state
