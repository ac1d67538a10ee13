"""Find the final answer in a model's text (shared by the math, exact and numeric verifiers).

The extraction rule. Only an explicit answer span counts; the first rule that finds one wins:

1. the game's answer format, when the caller passes it (``answer_pattern``, e.g. the
   ``[...]`` span of the maths games): the last match;
2. the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``);
3. the rest of the last line that states an answer: ``answer: ...``, ``answer is ...``,
   ``final answer: ...``, ``the final answer is ...``;
4. the whole text, when it is a single line of at most ``SHORT_LINE_CHARS`` characters
   (whether it is an answer at all is then for the grammar to say).

Anything else has no answer, however many numbers it mentions: a reward must never go to
"the last number anywhere" (``"I cannot solve this.\\nSee page 1"`` holds no answer 1).

Only the last ``MAX_TEXT_CHARS`` characters are looked at: the answer comes last, and a bound
keeps every regular expression here linear in a small input.
"""

from __future__ import annotations

import re

MAX_TEXT_CHARS = 4096
MAX_ANSWER_CHARS = 400
SHORT_LINE_CHARS = 200

ANSWER_LINE = re.compile(
    r"(?im)\b(?:final\s+answer|answer)\s*(?:is\b\s*:?|:|=)[ \t]*(?P<answer>\S[^\n]*)$"
)
BOXED = ("\\boxed{", "\\fbox{")


class ParseError(ValueError):
    """The text holds no answer that can be read; the message says why."""


def extract_answer(
    text: str, answer_pattern: re.Pattern[str] | str | None = None, whole_line: bool = True
) -> str:
    """The answer span of ``text`` by the rule above; ParseError when there is none.

    ``whole_line=False`` leaves out rule 4: a game's move parser wants a stated answer, not
    any short reply.
    """
    tail = text[-MAX_TEXT_CHARS:]
    if answer_pattern is not None:
        spans = re.findall(answer_pattern, tail)
        if spans:
            last = spans[-1]
            return (last if isinstance(last, str) else last[0]).strip()
    boxed = _last_boxed(tail)
    if boxed is not None:
        return boxed.strip()
    lines = [m["answer"] for m in ANSWER_LINE.finditer(tail)]
    if lines:
        return lines[-1].strip()
    stripped = tail.strip()
    if whole_line and stripped and "\n" not in stripped and len(stripped) <= SHORT_LINE_CHARS:
        return stripped
    raise ParseError(
        "no answer span found: give the answer as \\boxed{...}, on an 'answer: ...' line, "
        "or as the whole reply on one short line."
    )


def _last_boxed(text: str) -> str | None:
    start = max(text.rfind(opening) for opening in BOXED)
    if start < 0:
        return None
    begin = text.index("{", start) + 1
    depth = 1
    for index in range(begin, len(text)):
        depth += {"{": 1, "}": -1}.get(text[index], 0)
        if depth == 0:
            return text[begin:index]
    raise ParseError("\\boxed{ is never closed.")
