"""An optional capability: games small enough to hold a policy as a table over information sets.

For such games exploitability is computed exactly instead of estimated from matches: a policy
is read off the model at every information set (the probability of each legal action, scored
from its logprobs), and a best response is found by enumeration. A game offers the capability
by implementing `TabularGame`; ``isinstance(game, TabularGame)`` tells whether it does.

A policy is a table ``{info-set key: {action: probability}}`` covering every information set of
every role (one shared policy plays all seats). Actions are named as the game's ``legal()``
returns them, e.g. ``"bet"``; `answer_text` gives the text that plays one.

The average policy of several policies follows fictitious play (Heinrich, Lanctot and Silver
2015, "Fictitious Self-Play in Extensive-Form Games"): at each information set the policies are
mixed in proportion to weight times the probability that the role's own earlier actions lead
there, which makes the table play exactly like picking one policy by weight and following it
for the whole match.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from selfplay.api.game import Game, GameState
from selfplay.api.types import Role

Policy = Mapping[str, Mapping[str, float]]
PolicyTable = dict[str, dict[str, float]]
# Probabilities summing to 1 within this are accepted (floats scored from logprobs).
SUM_TOLERANCE = 1e-6


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
    """The completion that plays ``action``, e.g. ``"[bet]"``: what a scorer should rate."""
    text = f"[{action}]"
    if game.parse(text) != action:
        raise ValueError(f"{game.name} does not read {text!r} as the action {action!r}.")
    return text


def check_policy(info_sets: Sequence[InfoSet], policy: Policy) -> PolicyTable:
    """``policy`` as a plain table over ``info_sets``, or a ValueError naming what is wrong."""
    table: PolicyTable = {}
    for info in info_sets:
        if info.key not in policy:
            raise ValueError(f"The policy has no entry for information set {info.key!r}.")
        probs = policy[info.key]
        unknown = set(probs) - set(info.actions)
        if unknown:
            raise ValueError(
                f"At {info.key!r} the legal actions are {list(info.actions)}, "
                f"not {sorted(unknown)}."
            )
        row = {a: probs.get(a, 0) for a in info.actions}
        if any(p < 0 for p in row.values()) or abs(sum(row.values()) - 1) > SUM_TOLERANCE:
            raise ValueError(
                f"At {info.key!r} the probabilities {row} must be non-negative and sum to 1; "
                "normalise scores over the legal actions (policy_from_logprobs does)."
            )
        table[info.key] = row
    return table


def policy_from_logprobs(
    info_sets: Sequence[InfoSet], logprobs: Mapping[str, Mapping[str, float]]
) -> PolicyTable:
    """A policy from log-probabilities of each legal action's text, renormalised per info set.

    The model also gives probability to texts that are no legal action; the policy is its
    choice conditioned on answering legally (a softmax over the legal actions' logprobs).
    """
    table: PolicyTable = {}
    for info in info_sets:
        scores = logprobs.get(info.key, {})
        missing = [a for a in info.actions if a not in scores]
        if missing:
            raise ValueError(f"No logprob for {missing} at information set {info.key!r}.")
        top = max(scores[a] for a in info.actions)
        weights = {a: math.exp(scores[a] - top) for a in info.actions}
        total = sum(weights.values())
        table[info.key] = {a: w / total for a, w in weights.items()}
    return table


def average_policy(
    info_sets: Sequence[InfoSet], policies: Sequence[Policy], weights: Sequence[float]
) -> PolicyTable:
    """Mix ``policies`` by ``weights`` at each info set in proportion to the role's own reach.

    An information set no policy reaches keeps the plain weighted mean (it never matters).
    Fractions in, Fractions out: exact policies stay exact.
    """
    if len(policies) != len(weights) or not policies:
        raise ValueError(f"Give one weight per policy: {len(policies)} policies, {len(weights)}.")
    if any(w < 0 for w in weights) or not sum(weights) > 0:
        raise ValueError(f"Weights must be non-negative with a positive sum, got {list(weights)}.")
    tables = [check_policy(info_sets, policy) for policy in policies]
    by_key = {info.key: info for info in info_sets}
    reach = [_own_reach(by_key, table) for table in tables]
    average: PolicyTable = {}
    for info in info_sets:
        mass = [w * r[info.key] for w, r in zip(weights, reach, strict=True)]
        if sum(mass) == 0:
            mass = list(weights)
        total = sum(mass)
        average[info.key] = {
            a: sum(m * t[info.key][a] for m, t in zip(mass, tables, strict=True)) / total
            for a in info.actions
        }
    return average


def _own_reach(by_key: Mapping[str, InfoSet], table: PolicyTable) -> dict[str, float]:
    """The probability that each role's own actions lead to each of its information sets."""
    reach: dict[str, float] = {}

    def of(key: str) -> float:
        if key not in reach:
            previous = by_key[key].previous
            if previous is None:
                reach[key] = 1
            else:
                parent, action = previous
                reach[key] = of(parent) * table[parent][action]
        return reach[key]

    for key in by_key:
        of(key)
    return reach
