"""An optional game capability: a policy held as a table over information sets.

For games small enough to list their information sets (Kuhn poker has 12), exploitability is
computed exactly instead of estimated from matches: a policy is read off the model at every
information set (the probability of each legal action, scored from its log-probabilities),
and a best response is found by enumeration. A game offers the capability by implementing
`TabularGame`; ``isinstance(game, TabularGame)`` tells whether it does. Helpers to build such
a game (checking, averaging and renormalising tables) are in ``selfplay.games.tabular``.

A policy is a table ``{info-set key: {action: probability}}`` covering every information set of
every role (one shared policy plays all seats). Actions are named as the game's ``legal()``
returns them, e.g. ``"bet"``; `answer_text` gives the text that plays one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from selfplay.api.game import Game, GameState
from selfplay.api.types import Role

Policy = Mapping[str, Mapping[str, float]]
PolicyTable = dict[str, dict[str, float]]


@dataclass(frozen=True)
class InfoSet:
    """One decision point as the acting role knows it.

    ``state`` is a representative state where ``role`` is to act, so ``game.observe(state,
    role)`` is exactly the prompt shown at this information set; ``actions`` are the legal
    actions there. ``previous`` is the same role's previous decision on the way here as
    (info-set key, action), None at its first decision; perfect recall makes it unique.
    """

    key: str
    role: Role
    state: GameState
    actions: tuple[str, ...]
    previous: tuple[str, str] | None = None


@runtime_checkable
class TabularGame(Protocol):
    """What a game provides for exact evaluation of tabular policies."""

    def information_sets(self) -> list[InfoSet]:
        """Every information set of every role."""
        ...

    def exploitability(self, policy: Policy) -> float:
        """NashConv divided by the number of players; 0 exactly at a Nash equilibrium."""
        ...

    def average_policy(self, policies: Sequence[Policy], weights: Sequence[float]) -> PolicyTable:
        """The reach-weighted average of ``policies`` mixed with ``weights``."""
        ...


def answer_text(game: Game, action: str) -> str:
    """The completion that plays ``action``, e.g. ``"[bet]"``: what a scorer should rate.

    With an answer prefix (``"["``) it is what follows the prefix (``"bet]"``).
    """
    text = f"[{action}]"
    if game.parse(text) != action:
        raise ValueError(f"{game.name} does not read {text!r} as the action {action!r}.")
    return game.continuation(text)
