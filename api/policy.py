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

from selfplay.api.game import Game, GameState
from selfplay.api.types import Completion, Message, Role


@dataclass(frozen=True, slots=True)
class Request:
    """One seat asking for one move: what it sees, and the state scripted players read."""

    game: Game
    state: GameState
    role: Role
    messages: tuple[Message, ...]
    rng: random.Random


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
                play = req.game.players[self.player]
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
