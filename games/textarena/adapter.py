"""Any two-player TextArena environment as a selfplay game: ``--game textarena:TicTacToe-v0``.

With the optional extra installed (``pip install 'selfplay-rl[textarena]'``), the ``textarena``
game family turns an environment id into a Game class on first use; nothing imports TextArena
before that. The mapping onto our contract:

- players: TextArena's player ids 0 and 1 are the roles ``player_0`` and ``player_1``; the role
  to act is the env's ``current_player_id``, and the match is over when the env says ``done``;
- observations: what TextArena sent a player so far (its role prompt, the board, every move it
  may see) becomes the system message (the game's prompt plus our answer rule) and one user
  message of the rest, each line marked ``GAME:`` or ``Player i:``;
- actions: the last ``[...]`` span in the model's text is the action, passed on as ``[span]``;
- invalid moves: TextArena's invalid-move signal (``set_invalid_move``) becomes our recorded
  invalid move with TextArena's reason; our policy (``allowance`` retries, then forfeit with
  penalty/bonus) replaces the game's own, and an env that crashes on a move counts it invalid;
- outcome: the env's final rewards per player (usually +1/-1/0); our ``max_turns`` is only a
  safety net (TextArena games end themselves), so it defaults to 100 moves;
- ``legal_actions`` (for the ``random`` player and ``check_game``) are the bracketed moves the
  game names in the player's observation (``Available Moves: '[0]', '[4]'``) that the env
  accepts; games that never name their moves have none, so their ``random`` player only
  writes an invalid answer.

Where TextArena's design prevents pure immutable states: its env is one mutable object per
match that draws chance from the process-global RNG. A state here is therefore
``(seed, accepted actions so far)`` and the env behind it is rebuilt by replaying those
actions, with a cache of recent positions and a private copy of the global RNGs per match
(games/textarena/envs.py). States stay JSON values that replay from their seed; the cost is a
replay (and TextArena's own speed) on a cache miss.
"""

from __future__ import annotations

import random
import re
from functools import cache
from typing import Any, ClassVar

from pydantic import Field

from selfplay.api.game import Game, GameOptions, GameState, InvalidAction, Player
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.textarena.envs import (
    INSTALL_HINT,
    Position,
    Rejected,
    Replay,
    check_players,
    env_ids,
    one_player,
)
from selfplay.plugins.hookspecs import hookimpl
from selfplay.plugins.registry import PluginError

FAMILY = "textarena"
ANSWER_RULE = (
    "Answer with your move in square brackets, for example [4] or [check]; the last "
    "bracketed part of your reply is taken as your move."
)
MOVE = re.compile(r"\[([^\[\]\n]{1,40})\]")
MAX_CANDIDATES = 64  # bracketed spans tried per legal_actions call


class TextArenaOptions(GameOptions):
    max_turns: int = Field(
        default=100,
        ge=1,
        description="Moves after which the match is a draw (TextArena's own limits come first).",
    )
    last_messages: int = Field(
        default=0,
        ge=0,
        description="Show only the most recent game messages, after the rules (0 = all).",
    )
    history_chars: int = Field(
        default=2000,
        ge=0,
        description="Show only the most recent game messages that fit in this many characters "
        "(0 = all): a TextArena history grows every turn, and so would every prompt.",
    )
    env_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Keyword arguments for the TextArena environment, e.g. {max_rounds: 5}.",
    )


class TextArenaState(GameState):
    actions: tuple[str, ...] = ()  # every accepted action, as passed to the env


def random_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    moves = game.legal_actions(state, role)
    return rng.choice(moves) if moves else "[no move named by the game]"


class TextArenaGame(Game):
    """Base of the per-id classes ``game_class`` makes; ``env_id`` names the environment."""

    env_id: ClassVar[str]
    roles = ("player_0", "player_1")
    Options = TextArenaOptions
    State = TextArenaState
    zero_sum = False  # most TextArena games are, but not all (negotiations, dilemmas)
    answer_hint = "[move] (your move in square brackets)"
    players: ClassVar[dict[str, Player]] = {"random": random_player}

    def __init__(self, options: Any = None, rules: Any = None) -> None:
        super().__init__(options, rules)
        self.envs = Replay(self.env_id, dict(self.options.env_options))

    def position(self, state: TextArenaState) -> Position:
        return self.envs.at(state.seed, state.actions)

    def initial(self, seed: int, rng: random.Random) -> TextArenaState:
        state = TextArenaState(seed=seed)
        self.position(state)
        return state

    def current_role(self, state: TextArenaState) -> Role | None:
        env_state = self.position(state).state
        return None if env_state.done else f"player_{env_state.current_player_id}"

    def prompt(self, state: TextArenaState, role: Role) -> list[Message]:
        observations = self.position(state).state.observations[_player_id(role)]
        rules = [text for _, text, kind in observations if _is_prompt(kind)]
        lines = [
            f"{_sender(who)}: {text}" for who, text, kind in observations if not _is_prompt(kind)
        ]
        if self.options.last_messages:
            lines = lines[-self.options.last_messages :]
        if self.options.history_chars:
            lines = _recent(lines, self.options.history_chars)
        return [
            Message("system", "\n".join([*rules, ANSWER_RULE])),
            Message("user", "\n".join(lines) or "The game begins. Your move?"),
        ]

    def legal(self, state: TextArenaState, role: Role, action: str) -> str:
        move = f"[{action}]"
        try:
            self.envs.after(state.seed, state.actions, move)
        except Rejected as err:
            raise InvalidAction(str(err)) from None
        return move

    def apply(self, state: TextArenaState, role: Role, action: str) -> TextArenaState:
        return state.model_copy(update={"actions": (*state.actions, action)})

    def result(self, state: TextArenaState) -> Payoffs | None:
        env_state = self.position(state).state
        if not env_state.done:
            return None
        rewards = env_state.rewards or {}
        return {role: float(rewards.get(_player_id(role), 0.0)) for role in self.roles}

    def legal_actions(self, state: TextArenaState, role: Role) -> list[str]:
        seen = self.position(state).state.observations[_player_id(role)]
        spans = dict.fromkeys(s.strip() for _, text, _ in seen for s in MOVE.findall(text))
        moves = []
        for span in [s for s in spans if s][-MAX_CANDIDATES:]:
            try:
                moves.append(self.legal(state, role, span))
            except InvalidAction:
                continue
        return moves


def _recent(lines: list[str], budget: int) -> list[str]:
    """The most recent ``lines`` that fit in ``budget`` characters (the newest one cut to its
    end if it alone is longer), after a line saying that earlier ones were left out."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        if used + len(line) + 1 > budget:
            break
        kept.append(line)
        used += len(line) + 1
    if len(kept) == len(lines):
        return lines
    if not kept:
        left = f"{len(lines) - 1} earlier game messages and the start of this one"
        return [f"(the {left} are left out)", lines[-1][-budget:]]
    return [f"(the {len(lines) - len(kept)} earlier game messages are left out)", *kept[::-1]]


def _player_id(role: Role) -> int:
    return int(role.removeprefix("player_"))


def _is_prompt(kind: Any) -> bool:
    return getattr(kind, "name", None) == "PROMPT"


def _sender(sender: int) -> str:
    return "GAME" if sender < 0 else f"Player {sender}"


@cache
def game_class(env_id: str) -> type[TextArenaGame]:
    """The Game class for a TextArena environment id (made once per id)."""
    check_players(env_id, {})
    return type(
        f"TextArena[{env_id}]",
        (TextArenaGame,),
        {
            "__module__": __name__,
            "name": f"{FAMILY}:{env_id}",
            "env_id": env_id,
            "description": f"TextArena's {env_id} (two players); answer in square brackets.",
        },
    )


class TextArenaFamily:
    """``textarena:<env-id>``: every environment id of the installed TextArena."""

    def resolve(self, member: str) -> type[Game]:
        return game_class(member)

    def members(self) -> list[str]:
        """The ids a run can play: one-player environments (2048, Sudoku, ...) left out."""
        return [env_id for env_id in env_ids() if not one_player(env_id)]

    def summary(self) -> str:
        """One paragraph for `selfplay games`: how many it offers, or how to install it."""
        try:
            count = len(self.members())
        except PluginError:
            return f"{FAMILY}:ENV-ID plays TextArena games; it needs the extra: {INSTALL_HINT}."
        return (
            f"{FAMILY}:ENV-ID plays any of TextArena's {count} two-player environments, e.g. "
            f"{FAMILY}:TicTacToe-v0. `selfplay games --{FAMILY}` lists every id."
        )


@hookimpl
def register_game_families(register):
    register(FAMILY, TextArenaFamily())
