"""Find the final answer in a model's text (shared by the math, exact and numeric verifiers).

The extraction rule. A reply states its answer explicitly; its answer statements are

- the game's action, when the caller passes the game's answer format (``answer_pattern``,
  e.g. the ``[...]`` span of the maths games): the last span of that format, as in every
  game (earlier spans are working, not statements). A clarification request
  (``[ask: ...]``) is a question, not an answer: a reply whose last span is one has none;
- every ``\\boxed{...}`` and ``\\fbox{...}`` (also ``\\boxed {...}``, and ``\\boxed1``,
  which boxes one character or command, as LaTeX reads it; a box around a box counts once);
- every line that states an answer: ``answer: ...``, ``answer is ...``, ``final answer:
  ...``, ``the final answer is ...`` (a line holding a box counts through its box).

The final answer is the action when there is one, else the last box, else the last answer
line; a reply with none of these that is a single line of at most ``SHORT_LINE_CHARS``
characters is its own answer (whether it is one is then for the grammar to say). Anything
else has no answer, however many numbers it mentions: a reward must never go to "the last
number anywhere" (``"I cannot solve this.\\nSee page 1"`` holds no answer 1).

One final answer. Every other statement must state the same value as the final answer
(``\\boxed{1/2}`` and ``Answer: 0.5`` agree); a reply that states different answers
(``\\boxed{1} or \\boxed{2}``, two answer lines that differ) hedges and fails, whichever of
them is right. Deciding "the same value" is the verifier's job, so this module hands it the
final answer and the other statements (``Statements``).

The whole reply is read, however long, in time linear in its length: every pattern here
is linear, braces are matched in one pass, and a statement is cut at ``MAX_ANSWER_CHARS``
+ 1 characters (longer is not an answer anyway).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_ANSWER_CHARS = 400
SHORT_LINE_CHARS = 200
MAX_STATEMENTS = 20  # distinct statements beyond the final one: more is a hedge by itself

ANSWER_LINE = re.compile(
    r"(?im)\b(?:final[ \t]+answer|answer)[ \t]*(?:is\b[ \t]*:?|:|=)[ \t]*(?P<answer>\S[^\n]*)$"
)
BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])[ \t]*")
BOXED_IN_LINE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
ASK = re.compile(r"\s*ask\s*:", re.IGNORECASE)
COMMAND = re.compile(r"\\[A-Za-z]+|\\.")
SPACES = re.compile(r"\s+")


class ParseError(ValueError):
    """The text holds no answer that can be read; the message says why."""


@dataclass(frozen=True)
class Statements:
    """The final answer of a reply and its other statements (each distinct one once)."""

    final: str
    boxes: tuple[str, ...] = ()  # other boxed statements: a box always states an answer
    lines: tuple[str, ...] = ()  # other answer lines: prose when the grammar cannot read them

    @property
    def others(self) -> tuple[str, ...]:
        return self.boxes + self.lines


def extract_answer(
    text: str, answer_pattern: re.Pattern[str] | str | None = None, whole_line: bool = True
) -> str:
    """The final answer of ``text`` by the rule above; ParseError when there is none.

    ``whole_line=False`` leaves out the one-line reply: a game's move parser wants a stated
    answer, not any short reply.
    """
    return find_statements(text, answer_pattern, whole_line).final


def find_statements(
    text: str, answer_pattern: re.Pattern[str] | str | None = None, whole_line: bool = True
) -> Statements:
    """The final answer and the other answer statements of ``text``; ParseError if none."""
    action = _action(text, answer_pattern)
    boxes = [box for box in _boxes(text) if box is None or BOXED_IN_LINE.search(box) is None]
    lines = [
        _cut(m["answer"]).strip()
        for m in ANSWER_LINE.finditer(text)
        if BOXED_IN_LINE.search(m["answer"]) is None
    ]
    if action is not None:
        final = action
    elif boxes:
        final = boxes[-1]
        if final is None:
            raise ParseError("\\boxed{ is never closed.")
    elif lines:
        final = lines[-1]
    else:
        stripped = text.strip()
        if whole_line and stripped and "\n" not in stripped and len(stripped) <= SHORT_LINE_CHARS:
            return Statements(stripped)
        raise ParseError(
            "no answer found: give the answer as \\boxed{...}, on an 'answer: ...' line, "
            "or as the whole reply on one short line."
        )
    seen = {_key(final)}
    other_boxes = _distinct(("\\boxed{" if box is None else box for box in boxes), seen)
    other_lines = _distinct(lines, seen)
    if len(other_boxes) + len(other_lines) > MAX_STATEMENTS:
        raise ParseError(
            f"the reply states more than {MAX_STATEMENTS} different final answers; a reply must "
            "state exactly one final answer."
        )
    return Statements(final.strip(), tuple(other_boxes), tuple(other_lines))


def hedge_detail(values: list[str]) -> str:
    """The verdict detail for a reply that states different answers."""
    shown = ", ".join(repr(value[:30]) for value in values[:3])
    return (
        f"the reply states {len(values)} different final answers ({shown}); a reply must "
        "state exactly one final answer (repeating the same value is fine)."
    )


def _action(text: str, answer_pattern: re.Pattern[str] | str | None) -> str | None:
    if answer_pattern is None:
        return None
    last = None
    for match in re.finditer(answer_pattern, text):
        last = match
    if last is None:
        return None
    span = next((group for group in last.groups() if group is not None), last.group())
    if ASK.match(span):
        raise ParseError(
            f"the reply ends with a clarification request ({span.strip()[:40]!r}), which is "
            "a question, not an answer; end with the answer itself."
        )
    return _cut(span).strip()


def _boxes(text: str) -> list[str | None]:
    """The content of every box in order (None for one never closed)."""
    starts = list(BOX.finditer(text))
    if not starts:
        return []
    closing = _matching_braces(text)
    found: list[str | None] = []
    for start in starts:
        begin = start.end()
        if begin >= len(text):
            found.append(None)
        elif text[begin] == "{":
            end = closing.get(begin)
            cut = min(end, begin + 2 + MAX_ANSWER_CHARS) if end is not None else 0
            found.append(None if end is None else text[begin + 1 : cut])
        else:  # \boxed1, \boxed\pi: one character or one command, as LaTeX reads it
            command = COMMAND.match(text, begin)
            found.append(command.group() if command else text[begin])
    return found


def _matching_braces(text: str) -> dict[int, int]:
    """The index of the ``}`` that closes each ``{`` (one pass; unclosed ones are absent)."""
    pairs, stack = {}, []
    for match in re.finditer(r"[{}]", text):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            pairs[stack.pop()] = match.start()
    return pairs


def _cut(span: str) -> str:
    return span[: MAX_ANSWER_CHARS + 1]


def _key(statement: str) -> str:
    return SPACES.sub(" ", statement).strip().removesuffix(".").strip()


def _distinct(statements, seen: set[str]) -> list[str]:
    kept = []
    for statement in statements:
        key = _key(statement)
        if key not in seen:
            seen.add(key)
            kept.append(statement.strip())
    return kept
