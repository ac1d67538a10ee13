"""Does SmolLM2 read its Kuhn poker card when the prompt says the card's rank beside it?

SmolLM2-135M in pure self-play at Kuhn poker (`--recipe kuhn-poker-smollm2`) stays on the
card-blind floor (exploitability 1/3) on three seeds of five, and from a warm start that reads
the card it keeps a card reading that does not follow the ranks (it calls a bet more often
with a Queen than with a King: benchmarks/RESULTS.md). The rules say J < Q < K once, in the
system message; the card itself is one letter at the prompt's end ("Your card: K"). This
measure asks whether the card's form is the barrier: the same run, with the card's line
saying its rank ("Your card: K (the highest card)"), and nothing else changed.

    python benchmarks/kuhn_ranked_card.py -- --seed 0 --set threads=1 --out RUNS --name ranked-s0

Everything after ``--`` is ``selfplay run``'s arguments; the recipe is added unless given.
The variant lives in this process only (the built-in game's prompt is patched here), so the
run folder records ``game: kuhn-poker``: read such a folder with this script's prompt in mind
(`benchmarks/leduc_card_use.py` would score it under the plain prompt).
"""

from __future__ import annotations

import sys

from selfplay.api.types import Message
from selfplay.core.commands.cli import main as selfplay
from selfplay.games.kuhn_poker import ROLES, KuhnPoker

RANKED = {"J": "J (the lowest card)", "Q": "Q (the middle card)", "K": "K (the highest card)"}
PLAIN_PROMPT = KuhnPoker.prompt


def ranked_prompt(self: KuhnPoker, state, role) -> list[Message]:
    """The built-in prompt, with the card's line saying its rank (default phrasing only)."""
    messages = PLAIN_PROMPT(self, state, role)
    card = state.cards[ROLES.index(role)]
    plain, ranked = f"Your card: {card}", f"Your card: {RANKED[card]}"
    last = messages[-1]
    if not last.content.endswith(plain):
        return messages  # another phrasing names the card otherwise: left as it is
    return [*messages[:-1], Message(last.role, last.content[: -len(plain)] + ranked)]


def run(arguments: list[str]) -> int:
    KuhnPoker.prompt = ranked_prompt
    if "--recipe" not in arguments:
        arguments = ["--recipe", "kuhn-poker-smollm2", *arguments]
    return selfplay(["run", *arguments])


if __name__ == "__main__":
    given = sys.argv[1:]
    sys.exit(run(given[1:] if given[:1] == ["--"] else given))
