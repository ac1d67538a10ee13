"""Find the final answer in a model's text (shared by the math, exact and numeric verifiers).

The extraction rule, first match wins:

1. the content of the last ``\\boxed{...}``;
2. the rest of the last line that gives an answer: ``answer: ...``, ``final answer is ...``;
3. the whole text when it is one line of at most ``MAX_ANSWER_CHARS`` characters;
4. the last number in the text (``-3``, ``2.5``, ``3/4``).

Only the last ``MAX_TEXT_CHARS`` characters are looked at: the answer comes last, and a bound
keeps every regular expression here linear in a small input.
"""

from __future__ import annotations

import re

MAX_TEXT_CHARS = 4096
MAX_ANSWER_CHARS = 400

ANSWER_LINE = re.compile(r"(?im)\b(?:final\s+answer|answer)\s*(?:is)?\s*[:=]?\s*(.+)$")
LAST_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?")


class ParseError(ValueError):
    """The text holds no answer that can be read; the message says why."""


def extract_answer(text: str) -> str:
    """The answer part of ``text`` by the rule above; ParseError when there is none."""
    tail = text[-MAX_TEXT_CHARS:]
    boxed = _last_boxed(tail)
    if boxed is not None:
        return boxed
    lines = ANSWER_LINE.findall(tail)
    if lines:
        return lines[-1]
    stripped = tail.strip()
    if stripped and "\n" not in stripped and len(stripped) <= MAX_ANSWER_CHARS:
        return stripped
    numbers = LAST_NUMBER.findall(tail)
    if numbers:
        return numbers[-1]
    raise ParseError("no answer found (expected \\boxed{...}, 'answer: ...' or a number).")


def _last_boxed(text: str) -> str | None:
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, begin = 0, start + len("\\boxed{")
    for index in range(begin - 1, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[begin:index]
    raise ParseError("\\boxed{ is never closed.")
