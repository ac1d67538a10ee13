"""Kuhn poker's betting tree as plain functions of (card, history), and its exact values.

Three cards (J < Q < K), one private card each, one betting round; payoffs are the chips won or
lost (±1 or ±2). Enumerating the six deals gives the exact value of any pair of strategies,
Kuhn's family of equilibria and the exploitability (NashConv) of a policy table, with
Fractions where the computation must stay exact.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from fractions import Fraction

from selfplay.api.types import Payoffs, Role

CARDS = ("J", "Q", "K")
RANK = {card: i for i, card in enumerate(CARDS)}
ROLES = ("player_0", "player_1")
History = tuple[str, ...]
# Probabilities may be Fractions, which keep exact computations exact.
Prob = Fraction | float
# A strategy maps an information set (own card, betting so far, role) to action probabilities.
Strategy = Callable[[str, History, Role], Mapping[str, Prob]]
# Kuhn's one-parameter family of equilibria for player_0; every alpha in [0, 1/3] is a Nash
# equilibrium with the same value (-1/18 for player_0).
NASH_ALPHA = Fraction(1, 3)
GAME_VALUE = Fraction(-1, 18)


# ---- the betting tree, as functions of the history ---------------------------------------------


def is_terminal(history: History) -> bool:
    return history in (("check", "check"), ("bet", "call"), ("bet", "fold")) or len(history) == 3


def role_to_act(history: History) -> Role | None:
    """player_0 moves on even-length histories; None once the hand is over."""
    return None if is_terminal(history) else ROLES[len(history) % 2]


def legal_moves(history: History) -> tuple[str, ...]:
    """After a bet only call/fold; otherwise check/bet; nothing once the hand is over."""
    if is_terminal(history):
        return ()
    return ("call", "fold") if history[-1:] == ("bet",) else ("check", "bet")


def payoffs(cards: tuple[str, str], history: History) -> Payoffs:
    """Chips won by each role at a terminal history (ante 1, bet 1)."""
    if history[-1] == "fold":
        folder = ROLES[(len(history) - 1) % 2]
        return {r: (-1.0 if r == folder else 1.0) for r in ROLES}
    stake = 2.0 if "bet" in history else 1.0
    sign = 1.0 if RANK[cards[0]] > RANK[cards[1]] else -1.0
    return {"player_0": sign * stake, "player_1": -sign * stake}


def info_set(card: str, history: History) -> str:
    """A stable key for what the player to move knows, e.g. ``'K:check,bet'`` or ``'Q:'``."""
    return f"{card}:{','.join(history)}"


def info_sets(role: Role | None = None) -> list[tuple[Role, str, History]]:
    """All 12 decision points (six per role) as (role, card, history)."""
    points: list[tuple[Role, str, History]] = []
    for history in ((), ("check",), ("bet",), ("check", "bet")):
        who = role_to_act(history)
        if role is None or who == role:
            points.extend((who, card, history) for card in CARDS)
    return points


def expected_payoffs(strategies: Mapping[Role, Strategy]) -> dict[Role, Prob]:
    """Exact expected payoffs of two strategies, enumerating the six equally likely deals.

    Probabilities given as Fractions keep the result exact; floats give a float result.
    """
    total: dict[Role, Prob] = dict.fromkeys(ROLES, Fraction(0))
    deals = list(itertools.permutations(CARDS, 2))
    for cards in deals:
        for history, prob in _reach(cards, (), Fraction(1), strategies):
            for role, value in payoffs(cards, history).items():
                total[role] += prob * int(value) / len(deals)
    return total


def _reach(
    cards: tuple[str, str], history: History, prob: Prob, strategies: Mapping[Role, Strategy]
) -> list[tuple[History, Prob]]:
    """Terminal histories below ``history`` with their probabilities under ``strategies``."""
    if is_terminal(history):
        return [(history, prob)]
    role = role_to_act(history)
    policy = strategies[role](cards[ROLES.index(role)], history, role)
    leaves: list[tuple[History, Prob]] = []
    for action in legal_moves(history):
        p = policy.get(action, 0)
        if p:
            leaves.extend(_reach(cards, (*history, action), prob * p, strategies))
    return leaves


def uniform_probabilities(card: str, history: History, role: Role) -> dict[str, Fraction]:
    moves = legal_moves(history)
    return {m: Fraction(1, len(moves)) for m in moves}


def nash_probabilities(
    card: str, history: History, role: Role, alpha: Fraction = NASH_ALPHA
) -> dict[str, Fraction]:
    """Kuhn's equilibrium: bluff J with alpha, value-bet K with 3*alpha, call Q with alpha+1/3."""
    if not 0 <= alpha <= Fraction(1, 3):
        raise ValueError(f"alpha must lie in [0, 1/3], got {alpha}.")
    third = Fraction(1, 3)
    if history == ():
        bet = {"J": alpha, "Q": Fraction(0), "K": 3 * alpha}[card]
        return {"check": 1 - bet, "bet": bet}
    if history == ("check", "bet"):
        call = {"J": Fraction(0), "Q": alpha + third, "K": Fraction(1)}[card]
        return {"call": call, "fold": 1 - call}
    if history == ("check",):
        bet = {"J": third, "Q": Fraction(0), "K": Fraction(1)}[card]
        return {"check": 1 - bet, "bet": bet}
    if history == ("bet",):
        call = {"J": Fraction(0), "Q": third, "K": Fraction(1)}[card]
        return {"call": call, "fold": 1 - call}
    raise ValueError(f"No decision at history {history!r}.")


# ---- exact exploitability ----------------------------------------------------------------------


def strategy_table(strategy: Strategy) -> dict[str, dict[str, Prob]]:
    """``strategy`` as a policy table over the 12 information sets (keys from `info_set`)."""
    return {info_set(card, h): dict(strategy(card, h, role)) for role, card, h in info_sets()}


def table_strategy(table: Mapping[str, Mapping[str, Prob]]) -> Strategy:
    """The strategy that plays a policy table (the inverse of `strategy_table`)."""
    return lambda card, history, role: table[info_set(card, history)]


def best_response_value(role: Role, opponent: Strategy) -> Prob:
    """The most ``role`` can expect against ``opponent``: the best of its 64 pure strategies."""
    points = info_sets(role)
    other = ROLES[1 - ROLES.index(role)]
    best: Prob | None = None
    for choice in itertools.product(*(legal_moves(history) for _, _, history in points)):
        plan = {
            info_set(card, history): a for (_, card, history), a in zip(points, choice, strict=True)
        }
        value = expected_payoffs({role: _pure(plan), other: opponent})[role]
        best = value if best is None else max(best, value)
    return best


def _pure(plan: Mapping[str, str]) -> Strategy:
    return lambda card, history, role: {plan[info_set(card, history)]: 1}


def nash_conv(strategy: Strategy) -> Prob:
    """What best responses gain against ``strategy`` playing both seats (0 at an equilibrium).

    In a zero-sum game the payoffs of the strategy against itself cancel, so NashConv is the
    sum of the two best-response values.
    """
    return sum(best_response_value(role, strategy) for role in ROLES)


# ---- scripted players --------------------------------------------------------------------------
