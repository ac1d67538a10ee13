"""Helpers for tabular games (the `selfplay.api.game.TabularGame` capability).

Checking a policy table, renormalising scored log-probabilities and averaging tables. The
capability itself (`TabularGame`, `InfoSet`, `answer_text`) is part of the contracts and
re-exported here for the games that import it from this module.

The average policy of several policies follows fictitious play (Heinrich, Lanctot and Silver
2015, "Fictitious Self-Play in Extensive-Form Games"): at each information set the policies are
mixed in proportion to weight times the probability that the role's own earlier actions lead
there, which makes the table play exactly like picking one policy by weight and following it
for the whole match.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from selfplay.api.game import InfoSet, Policy, PolicyTable, TabularGame, answer_text

__all__ = [
    "InfoSet",
    "Policy",
    "PolicyTable",
    "TabularGame",
    "answer_text",
    "average_policy",
    "check_policy",
    "policy_from_logprobs",
]
# Probabilities summing to 1 within this are accepted (floats scored from logprobs).
SUM_TOLERANCE = 1e-6


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
