"""Where `legal-pg`'s all-answers update settles on Kuhn poker, and how exploitable that is.

The update moves each legal answer b at an information set by its value, and a uniform magnet
under a reverse KL pulls the choice back toward uniform play (`kuhn-poker-smollm2`: kl_coef
0.2). Per information set, on a softmax over the answers' scores z, the step is

    z_b += eta * [ q(b) * (Q(b) - sum_a q(a) Q(a))  -  c * (q(b) - 1/n) ]

(the first term the gradient of the menu's expected value, the second that of -c KL(u || q)),
where Q(b) is the expected return after answer b given the information set, against the
policy itself in the other seat. Where the step is zero for every answer the update has
nothing left to move: the regularized equilibrium the run's last iterate closes in on when
its learning rate falls. This script finds that point on the exact tree (the six deals, no
sampling, no network: the mean field of the update) for each coefficient c, and prints its
exploitability (NashConv / 2, as the runs log it) and how far from rest it is.

    python benchmarks/kuhn_magnet.py --coefs 0.3 0.2 0.1 0.05

It is not the logit quantal-response equilibrium, pi(b) ~ exp(Q(b) / c): the reverse KL's
pull grows with q(b) - 1/n, not with log q(b), and keeps the choice more mixed.
"""

from __future__ import annotations

import argparse
import itertools
import math

from selfplay.games.kuhn_poker.tree import (
    CARDS,
    ROLES,
    info_set,
    info_sets,
    is_terminal,
    legal_moves,
    nash_conv,
    payoffs,
    role_to_act,
    table_strategy,
)

DEALS = list(itertools.permutations(CARDS, 2))
Table = dict[str, dict[str, float]]


def _value(cards: tuple[str, str], history: tuple[str, ...], table: Table, role: str) -> float:
    """``role``'s expected return from ``history`` on, both seats playing ``table``."""
    if is_terminal(history):
        return payoffs(cards, history)[role]
    card = cards[ROLES.index(role_to_act(history))]
    moves = table[info_set(card, history)]
    return sum(p * _value(cards, (*history, a), table, role) for a, p in moves.items())


def _others_reach(cards: tuple[str, str], history: tuple[str, ...], table: Table, role: str):
    """The probability that the other seat's moves in ``history`` were played."""
    reach = 1.0
    for i, move in enumerate(history):
        seat = ROLES[i % 2]
        if seat != role:
            reach *= table[info_set(cards[i % 2], history[:i])][move]
    return reach


def answer_values(table: Table) -> dict[str, dict[str, float]]:
    """Q(b) at every information set: the return after answer b, given the set."""
    values = {}
    for role, card, history in info_sets():
        seat = ROLES.index(role)
        total = {a: 0.0 for a in legal_moves(history)}
        weight = 0.0
        for cards in (d for d in DEALS if d[seat] == card):
            reach = _others_reach(cards, history, table, role)
            weight += reach
            for a in total:
                total[a] += reach * _value(cards, (*history, a), table, role)
        values[info_set(card, history)] = {a: v / weight for a, v in total.items()}
    return values


def _softmax(scores: dict[str, float]) -> dict[str, float]:
    top = max(scores.values())
    weights = {a: math.exp(s - top) for a, s in scores.items()}
    total = sum(weights.values())
    return {a: w / total for a, w in weights.items()}


def settle(coef: float, steps: int, eta: float) -> tuple[Table, float]:
    """The policy after ``steps`` mean-field steps from uniform play, and the largest step
    still being taken (0 at rest)."""
    scores = {info_set(c, h): dict.fromkeys(legal_moves(h), 0.0) for _, c, h in info_sets()}
    moved = 0.0
    for _ in range(steps):
        table = {key: _softmax(s) for key, s in scores.items()}
        moved = 0.0
        for key, values in answer_values(table).items():
            q = table[key]
            mean = sum(q[a] * values[a] for a in q)
            for a in q:
                step = q[a] * (values[a] - mean) - coef * (q[a] - 1 / len(q))
                scores[key][a] += eta * step
                moved = max(moved, abs(step))
    return {key: _softmax(s) for key, s in scores.items()}, moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coefs", type=float, nargs="+", default=[0.3, 0.2, 0.1, 0.05])
    parser.add_argument("--steps", type=int, default=20000, help="mean-field steps")
    parser.add_argument("--eta", type=float, default=0.5, help="step size of the mean field")
    args = parser.parse_args()
    print("| kl_coef | exploitability at rest | largest step left |")
    print("|---:|---:|---:|")
    for coef in args.coefs:
        table, moved = settle(coef, args.steps, args.eta)
        exploitability = float(nash_conv(table_strategy(table))) / 2
        print(f"| {coef:g} | {exploitability:.4f} | {moved:.1e} |", flush=True)


if __name__ == "__main__":
    main()
