"""What a player is shown of an OpenSpiel state: OpenSpiel's own string, or it in words.

OpenSpiel's information-state strings are written for programs. Leduc poker's reads
``[Observer: 0][Private: 5][Round 1][Player: 0][Pot: 2][Money: 99 99][Round1: ][Round2: ]``:
the card a number whose rank is the number // 2, the bets numbers too. The tiny model trained
on that string played as if it never saw its card: after 15 iterations its policy gave every
card the same probabilities to three decimals, and 100 steps of imitating a player whose moves
depend on its card did not teach it to read the card there, where in words they did
(benchmarks/RESULTS.md, "Leduc poker: the policy never read its card").

``game_options.view: readable`` (the default) shows the games listed in `READABLE` in words,
the player's own card last, next to where the answer begins; ``view: spiel`` shows OpenSpiel's
string as it is, for every game. A view shows only what the acting player knows, so each
information set (keyed, for exact exploitability, by OpenSpiel's string) is one prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RANKS = ("Jack", "Queen", "King", "Ace")  # Leduc has players + 1 ranks, two suits of each
BETS = {0: "fold", 1: "call", 2: "raise"}


def leduc(position: Any, player: int) -> str:
    """Leduc poker for ``player``: round, pot, chips, each round's bets, the cards."""
    chips = ", ".join(
        f"player_{i} {money:g}" + (" (you)" if i == player else "")
        for i, money in enumerate(position.money())
    )
    lines = [f"Round {position.round()} of 2. Pot {position.pot()}. Chips left: {chips}."]
    for number, bets in ((1, position.round1()), (2, position.round2())):
        if number <= position.round():
            lines.append(f"Round {number} bets: {', '.join(BETS[b] for b in bets) or 'none yet'}")
    public = position.public_card()
    lines.append(f"Public card: {card(public) if public >= 0 else 'not dealt yet'}")
    lines.append(f"Your card: {card(position.private_card(player))}")
    return "\n".join(lines)


def card(number: int) -> str:
    rank = number // 2
    return RANKS[rank] if rank < len(RANKS) else f"rank {rank + 1}"


# game short name -> (renderer, the sentence of the rules that explains what it shows)
READABLE: dict[str, tuple[Callable[[Any, int], str], str]] = {
    "leduc_poker": (
        leduc,
        "You are shown the round, the pot, each player's chips, each round's bets so far, the "
        "public card once dealt, and your own card.",
    ),
}


def readable(short_name: str, view: str) -> tuple[Callable[[Any, int], str], str] | None:
    """The game's rendering in words when ``view`` asks for one and the game has one."""
    return READABLE.get(short_name) if view == "readable" else None
