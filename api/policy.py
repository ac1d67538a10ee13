"""Policies: anything that completes a batch of turn requests.

The learner (a Hugging Face causal LM), a frozen snapshot, a scripted player and a test mock
all answer the same call, so the rollout engine batches them alike. A request carries the
prompt messages for language models and the game state for scripted players.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from selfplay.api.errors import ConfigError
from selfplay.api.game import Game, GameState, Player
from selfplay.api.types import Completion, Message, Role


@dataclass(frozen=True, slots=True)
class Request:
    """One seat asking for one move: what it sees, and the state scripted players read."""

    game: Game
    state: GameState
    role: Role
    messages: tuple[Message, ...]
    rng: random.Random
    # the whole answers to choose among, when the asker fixes them (a judge's verdict lines):
    # a policy that scores answers picks one of these instead of writing
    menu: tuple[str, ...] = ()


class Policy(ABC):
    """Completes requests. ``name`` identifies the seat holder in episodes and ratings."""

    name: str = "policy"

    @abstractmethod
    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        """One completion per request, in order."""


class ScriptedPolicy(Policy):
    """Plays a game's scripted player (``game.players[player]``), e.g. ``random`` or ``minimax``."""

    def __init__(self, player: str) -> None:
        self.player = player
        self.name = f"scripted:{player}"

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        completions = []
        for req in requests:
            try:
                play = scripted_player(req.game, self.player)
            except KeyError:
                known = ", ".join(sorted(req.game.players)) or "none"
                raise ValueError(
                    f"Game {req.game.name!r} has no scripted player {self.player!r}; "
                    f"its players are: {known}."
                ) from None
            # a scripted answer is whole; as a reply it continues the game's answer prefix
            text = req.game.continuation(play(req.game, req.state, req.role, req.rng))
            completions.append(Completion(text=text))
        return completions


class GreedyPolicy(Policy):
    """Another policy playing its argmax moves, under its own name so nothing trains on them."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = f"{inner.name}:greedy"
        self.role_context = getattr(inner, "role_context", None)

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        return self.inner.act(requests, greedy=True)


class LookaheadPolicy(Policy):
    """Another policy's argmax moves, checked one move ahead against the rules.

    It takes a move that wins at once when there is one, and otherwise avoids a move after
    which the next player can win at once; among the moves left it keeps the inner policy's
    choice, or picks one at random when that choice was ruled out. This is the cheapest
    search over the rules (AlphaZero's is deep): an opponent that punishes a missed block and
    never misses its own win. It reads the whole state, so it plays only games of perfect
    information, and it is named apart (``learner:lookahead``) so nothing trains on it.
    """

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = f"{inner.name}:lookahead"
        self.role_context = getattr(inner, "role_context", None)

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        proposals = self.inner.act(requests, greedy=True)
        return [
            Completion(text=_looked_ahead(req, proposal.text))
            for req, proposal in zip(requests, proposals, strict=True)
        ]


def _looked_ahead(req: Request, text: str) -> str:
    game, state, role = req.game, req.state, req.role
    if not game.perfect_information:
        raise ValueError(
            f"The lookahead opponent reads the whole state, and {game.name!r} hides "
            "information (its perfect_information is False); use another opponent."
        )
    good = searched_moves(game, state, role)
    chosen, _ = game.action_of(text, state, role)
    if not good or chosen in good:
        return text
    return game.continuation(req.rng.choice(list(good.values())))


def searched_moves(game: Game, state: GameState, role: Role) -> dict[str, str]:
    """The moves a one-move search over the rules keeps: ``{action: move text}``.

    The moves that win at once when there are any; otherwise those after which the next
    player cannot win at once; empty when every move lets the next player win. A game of
    perfect information only: the search reads the whole state.
    """
    moves = {game.action_of(move, state, role)[0]: move for move in game.legal_actions(state, role)}
    after = {
        action: game.judge(state, role, game.continuation(move))[0]
        for action, move in moves.items()
    }
    wins = {action: moves[action] for action, then in after.items() if _won(game, then, role)}
    if wins:
        return wins
    return {
        action: moves[action]
        for action, then in after.items()
        if not _can_win_next(game, then, role)
    }


def _won(game: Game, state: GameState, role: Role) -> bool:
    payoffs = game.outcome(state)
    return payoffs is not None and payoffs[role] > max(v for r, v in payoffs.items() if r != role)


def _can_win_next(game: Game, state: GameState, role: Role) -> bool:
    """Whether the player to act in ``state``, not ``role``, has a move that wins at once."""
    other = game.to_act(state)
    if other is None or other == role:
        return False
    for move in game.legal_actions(state, other):
        after, _ = game.judge(state, other, game.continuation(move))
        if _won(game, after, other):
            return True
    return False


class MockPolicy(Policy):
    """Answers from a function of the request, or cycles through fixed texts; for tests."""

    def __init__(
        self, respond: Callable[[Request], str] | Sequence[str], name: str = "mock"
    ) -> None:
        self.name = name
        self.calls: list[int] = []  # batch size of every call, so tests can check batching
        if callable(respond):
            self._respond = respond
        else:
            texts = list(respond)
            counter = iter(range(10**12))
            self._respond = lambda _req: texts[next(counter) % len(texts)]

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        self.calls.append(len(requests))
        return [Completion(text=self._respond(req)) for req in requests]


# ---- scripted players by name, with a strength dial: ``minimax~0.3`` --------------------
#
# A game's scripted players are ``Game.players`` (``random``, ``minimax``, ``nash``, ...). Any of
# them may be weakened by a share of random moves: ``NAME~EPS`` plays a uniformly random legal
# move with probability EPS and NAME's move otherwise (an ε-random solver, the opponent of
# mixed strength that small models learn a game against), wherever a scripted player is named:
# ``--opponent fixed:minimax~0.3``, ``pool.scripted``, ``eval.opponents``,
# ``cold_start.players``. The random moves come from the match's generator, so a match
# replays. The game must list its legal moves (``Game.legal_actions``).

DIAL = "~"


def split_player(name: str) -> tuple[str, float | None]:
    """``("minimax", 0.3)`` for ``minimax~0.3``; ``(name, None)`` without a dial; a bad dial
    is a ConfigError naming it."""
    base, dial, share = name.partition(DIAL)
    if not dial:
        return name, None
    try:
        epsilon = float(share)
    except ValueError:
        epsilon = -1.0
    if not 0.0 <= epsilon <= 1.0:
        raise ConfigError(
            f"Scripted player {name!r}: the share of random moves after {DIAL!r} must be a "
            f"number from 0 to 1, e.g. {base}{DIAL}0.3."
        )
    return base, epsilon


def has_player(game: Game, name: str) -> bool:
    """Whether ``name`` is one of ``game``'s scripted players, with or without a dial (a
    ConfigError for a bad dial)."""
    return split_player(name)[0] in game.players


def scripted_player(game: Game, name: str) -> Player:
    """The player function ``name`` stands for; KeyError naming the known players."""
    base, epsilon = split_player(name)
    if base not in game.players:
        raise KeyError(name)
    play = game.players[base]
    if epsilon is None:
        return play

    def weakened(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
        if rng.random() < epsilon:
            moves = game.legal_actions(state, role)
            if not moves:
                raise ConfigError(
                    f"Scripted player {name!r} plays random moves, but {game.name} does not "
                    "list its legal moves; name the player without a dial."
                )
            return rng.choice(moves)
        return play(game, state, role, rng)

    return weakened
