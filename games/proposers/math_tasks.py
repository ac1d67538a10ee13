"""What the maths proposer games share: the proposal format, the verifier, held-out evaluation.

A proposal is one answer span: ``[problem: <text> answer: <answer>]``; the problem is what
comes before the last ``answer:``. The answer must be readable by the math verifier's own safe
grammar (``7``, ``-3/4``, ``2*sqrt(2)``), checked when the proposal is made, so a proposer can
never turn a match it is losing into a void one with an unreadable reference.

The verifier (``math`` by default, any registered one by name) decides outcomes inside the
game, deterministically. The run hands the game a factory at construction, so every game
object of a run shares one verifier (the math verifier keeps a worker process). A verdict is
stored in the state, so a finished state never calls the verifier again.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from selfplay.api.game import InvalidAction
from selfplay.games.banks import Problem, load_bank

if TYPE_CHECKING:
    from selfplay.api.verifier import Verifier

# A proposal is longer than the default 40-character answer span.
SPAN = re.compile(r"\[([^\[\]\n]{1,400})\]")
PROPOSAL = re.compile(r"^\s*problem\s*:\s*(?P<problem>.+)\banswer\s*:\s*(?P<answer>.+?)\s*$", re.I)
MIN_PROBLEM_CHARS = 8
PROPOSAL_FORMAT = "[problem: <the problem> answer: <its answer>]"
_VERIFIERS: dict[str, Verifier] = {}


def parse_proposal(action: str) -> tuple[str, str]:
    """``'problem: What is 2+3? answer: 5'`` -> ``('What is 2+3?', '5')``; InvalidAction else."""
    found = PROPOSAL.match(action)
    if found is None:
        raise InvalidAction(f"write the problem and its answer as {PROPOSAL_FORMAT}.")
    problem, answer = found["problem"].strip(), found["answer"].strip()
    if len(problem) < MIN_PROBLEM_CHARS:
        raise InvalidAction(f"the problem {problem!r} is too short to be a problem.")
    check_readable(answer)
    return problem, answer


def format_proposal(problem: str, answer: str) -> str:
    return f"[problem: {problem} answer: {answer}]"


def check_readable(answer: str) -> None:
    """InvalidAction unless the math grammar reads ``answer`` (whitelist parser, never eval)."""
    from selfplay.verifiers.answers import ParseError
    from selfplay.verifiers.math_parse import parse_answer

    try:
        parse_answer(answer)
    except (ParseError, ArithmeticError, ValueError, RecursionError) as err:
        raise InvalidAction(
            f"the answer {answer[:40]!r} is not a number or expression the checker can read "
            f"({err}); write e.g. 7, -3/4 or 2*sqrt(2)."
        ) from None


def wrong_answer(answer: str) -> str:
    """An answer that differs from ``answer`` (for scripted players and legal_actions)."""
    return f"{answer} + 1"


def held_out_bank(topics: Sequence[str]) -> list[Problem]:
    """The held-out problems of ``topics`` (those the game trains on)."""
    return [p for t in topics for p in load_bank(t, "held_out")]


def pick(problems: Sequence[Problem], limit: int, seed: int) -> list[Problem]:
    """Up to ``limit`` problems in a fixed order for ``seed`` (the same ones every evaluation)."""
    chosen = list(problems)
    random.Random(f"selfplay-tasks-{seed}").shuffle(chosen)
    return chosen[:limit]


def after_prefix(text: str, prefix: str) -> str:
    """``'reply: yes'`` -> ``'yes'``; text without the ``prefix:`` comes back whole."""
    found = re.match(rf"\s*{prefix}\s*:", text, re.IGNORECASE)
    return (text[found.end() :] if found else text).strip()
