"""TextArena environments driven as replayable values: made, seeded, stepped, cached.

TextArena (the optional extra ``textarena``) models a match as one mutable ``Env`` object that
``step`` changes in place, and draws chance (deals, dice) from Python's *global* ``random``
module, which its ``State`` re-seeds on every reset (a few games use numpy's global RNG). Our
states are immutable values that replay from a seed, so this module keeps the mutable side
out of sight:

- a position is named by ``(seed, accepted actions so far)``; ``Replay.at`` returns the env in
  that position from a small LRU cache, or rebuilds it by resetting with the seed and
  replaying the actions (and checks that the replay accepts every action again);
- every env runs on its own copy of the global RNGs (``private_rng``): the copy is saved with
  the cached env and the caller's RNG state is given back untouched, so interleaving many
  matches, or replaying one later, draws the same chance as playing it straight through;
- a move is tried on a deep copy (``Replay.after``), so an invalid attempt never touches a
  cached position; TextArena's invalid-move signal (``State.set_invalid_move``) is caught on
  that copy and turned into a reason, and the game's own retry/forfeit rules never run: the
  invalid-move policy is ours (api/game.py).

Nothing here imports TextArena until an environment is made.
"""

from __future__ import annotations

import copy
import difflib
import importlib
import importlib.util
import random
import re
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from selfplay.plugins.registry import PluginError, UnknownName

INSTALL_HINT = "pip install 'selfplay-rl[textarena]' (or: pip install textarena)"
PLAYERS = 2  # only two-player environments are adapted so far
MANY_PLAYERS = re.compile(r"\b(?:TwoPlayer|\w*MultiPlayer)State\(")
PLAYER_COUNTS = (1, 3, 4, 5, 6, 7, 8)  # tried to name the counts a rejected environment wants
CACHE_SIZE = 2048  # cached positions per game object; a miss costs a replay, not a wrong answer

RngState = tuple[Any, Any]  # (random.getstate(), np.random.get_state())


class Rejected(ValueError):
    """The environment refused a move; the message is TextArena's reason."""


def textarena() -> Any:
    """The textarena module, or a PluginError that names the pip command."""
    try:
        import textarena
    except ImportError:
        raise PluginError(f"TextArena games need the optional extra: {INSTALL_HINT}.") from None
    return textarena


def env_ids() -> list[str]:
    """Every environment id the installed TextArena registers."""
    textarena()
    from textarena.envs.registration import ENV_REGISTRY

    return sorted(ENV_REGISTRY)


def one_player(env_id: str) -> bool:
    """Whether ``env_id`` is a one-player environment, told from its source without making it:
    its module builds TextArena's ``SinglePlayerState`` and no state of several players."""
    from textarena.envs.registration import ENV_REGISTRY

    entry = ENV_REGISTRY[env_id].entry_point
    if not isinstance(entry, str):
        return False
    try:
        spec = importlib.util.find_spec(entry.partition(":")[0])
        source = Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""
    except Exception:  # a module of TextArena's that does not even import: let the run say
        return False
    return "SinglePlayerState(" in source and not MANY_PLAYERS.search(source)


def make_env(env_id: str, options: dict[str, Any]) -> Any:
    """A new, unwrapped env for ``env_id``: our prompts and parsing replace TextArena's wrappers.

    ``-raw``/``-train`` ids differ from the plain id only in those wrappers, so they play alike.
    """
    ids = env_ids()
    from textarena.envs.registration import ENV_REGISTRY

    if env_id not in ENV_REGISTRY:
        close = difflib.get_close_matches(env_id, ids, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownName(
            f"TextArena has no environment {env_id!r}.{hint} "
            "List them with `selfplay games --textarena`."
        )
    spec = ENV_REGISTRY[env_id]
    try:
        env_class = spec.entry_point
        if isinstance(env_class, str):
            module, _, name = env_class.partition(":")
            env_class = getattr(importlib.import_module(module), name)
        env = env_class(**{**spec.kwargs, **options})
    except Exception as err:
        why = (
            "its code needs a newer Python than this one"
            if isinstance(err, SyntaxError)
            else "some environments need downloads or API keys and cannot run offline"
        )
        raise PluginError(
            f"TextArena environment {env_id!r} could not be made: {type(err).__name__}: "
            f"{_first_line(err)} ({why})."
        ) from None
    env.env_id = env_id
    return env


def seed_rng(seed: int) -> RngState:
    """The global RNG states a match with ``seed`` starts from."""
    return random.Random(seed).getstate(), np.random.RandomState(seed % 2**32).get_state()


@contextmanager
def private_rng(start: RngState) -> Iterator[list[RngState]]:
    """Run TextArena code on its own global RNG states; the yielded list receives the end state."""
    saved = random.getstate(), np.random.get_state()
    random.setstate(start[0])
    np.random.set_state(start[1])
    end: list[RngState] = []
    try:
        yield end
    finally:
        end.append((random.getstate(), np.random.get_state()))
        random.setstate(saved[0])
        np.random.set_state(saved[1])


def check_players(env_id: str, options: dict[str, Any]) -> None:
    """Raise a PluginError naming the player count if ``env_id`` is not a two-player game."""
    try:
        _reset(make_env(env_id, options), 0)
        return
    except (PluginError, UnknownName):
        raise
    except Exception as err:
        problem = f"{type(err).__name__}: {_first_line(err)}"
    accepted = [n for n in PLAYER_COUNTS if _accepts(env_id, options, n)]
    if accepted:
        counts = ", ".join(str(n) for n in accepted)
        raise PluginError(
            f"TextArena environment {env_id!r} is not a {PLAYERS}-player game: of 1-8 players it "
            f"accepts {counts} (TextArena says: {problem}). Only two-player TextArena games "
            "are supported."
        )
    raise PluginError(f"TextArena environment {env_id!r} failed to start: {problem}.")


def _accepts(env_id: str, options: dict[str, Any], players: int) -> bool:
    try:
        _reset(make_env(env_id, options), 0, players)
    except Exception:
        return False
    return True


def _reset(env: Any, seed: int, players: int = PLAYERS) -> RngState:
    with private_rng(seed_rng(seed)) as end:
        env.reset(num_players=players, seed=seed)
    return end[0]


def _first_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip("* ")]
    return lines[0][:200] if lines else "no message"


@dataclass(frozen=True)
class Position:
    """An env after some moves, with the global RNG states it continues from."""

    env: Any
    rng: RngState

    @property
    def state(self) -> Any:
        return self.env.state


class Replay:
    """Positions of one environment id, by ``(seed, actions)``: cached or rebuilt by replay."""

    def __init__(self, env_id: str, options: dict[str, Any], size: int = CACHE_SIZE) -> None:
        self.env_id = env_id
        self.options = options
        self.size = size
        self._cache: OrderedDict[tuple[int, tuple[str, ...]], Position] = OrderedDict()

    def at(self, seed: int, actions: tuple[str, ...]) -> Position:
        """The position after ``actions`` in the match of ``seed`` (never to be mutated)."""
        found = self._get((seed, actions))
        if found is not None:
            return found
        start = len(actions)
        while start > 0 and (seed, actions[:start]) not in self._cache:
            start -= 1
        position = self._get((seed, actions[:start])) or self._start(seed)
        for i in range(start, len(actions)):
            try:
                position = self.after(seed, actions[:i], actions[i], position)
            except Rejected as err:
                raise RuntimeError(
                    f"TextArena environment {self.env_id!r} did not replay seed {seed}: it "
                    f"accepted {actions[i]!r} at move {i} before and rejects it now ({err})."
                ) from None
        return position

    def after(
        self, seed: int, actions: tuple[str, ...], move: str, position: Position | None = None
    ) -> Position:
        """The position after ``move`` from ``actions``; Rejected with TextArena's reason."""
        key = (seed, (*actions, move))
        found = self._get(key)
        if found is not None:
            return found
        position = position or self.at(seed, actions)
        env = copy.deepcopy(position.env)
        reasons = _watch_invalid(env.state)
        try:
            with private_rng(position.rng) as end:
                env.step(move)
        except Exception as err:
            raise Rejected(f"the game could not apply {move}: {_first_line(err)}") from None
        finally:
            vars(env.state).pop("set_invalid_move", None)
        if reasons:
            raise Rejected(reasons[0])
        return self._put(key, Position(env, end[0]))

    def _start(self, seed: int) -> Position:
        env = make_env(self.env_id, self.options)
        return self._put((seed, ()), Position(env, _reset(env, seed)))

    def _get(self, key: tuple[int, tuple[str, ...]]) -> Position | None:
        position = self._cache.get(key)
        if position is not None:
            self._cache.move_to_end(key)
        return position

    def _put(self, key: tuple[int, tuple[str, ...]], position: Position) -> Position:
        self._cache[key] = position
        if len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return position


def _watch_invalid(state: Any) -> list[str]:
    """Record the reasons ``state.set_invalid_move`` is called with (TextArena's signal)."""
    reasons: list[str] = []
    original = state.set_invalid_move

    def record(*args: Any, **kwargs: Any) -> Any:
        reason = kwargs.get("reason", args[0] if args else None)
        reasons.append(str(reason).strip() if reason else "invalid move.")
        return original(*args, **kwargs)

    state.set_invalid_move = record
    return reasons
