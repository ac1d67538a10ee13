"""Find the final answer in a model's text (shared by the math, exact and numeric verifiers).

The rules, with tables, are in docs/verifiers.md (section 1). A reply's answer statements:

- the game's action, when the caller passes its answer format (``answer_pattern``): the last
  span of that format (earlier spans are working); a last span ``[ask: ...]`` is a question,
  so the reply has no answer;
- every ``\\boxed{...}`` and ``\\fbox{...}`` (``\\boxed {...}``; ``\\boxed1`` boxes one
  character or command, as LaTeX reads it);
- every answer line (``answer: ...``, ``answer is ...``, ``the final answer is ...``);
- what holds a box: an outer box, an answer line, the maths (``$...$``, ``\\(...\\)``,
  ``\\[...\\]``) around it, a short line; what it states is ``box_holders.reading``: the box
  alone where it is one whole side of an equation (``$P(A) = \\boxed{1/2}$``), else the
  holder with the box's content in its place (``\\boxed{3 - \\boxed{1}}`` states ``3 - 1``
  and 1). One that cannot be read is prose, unless a connective bears on its box
  (``$x = \\pm\\boxed{3}$``): then it is a different answer, like a box. A holder of
  several boxes side by side is read in parts, one box each (``x = -\\boxed{3} or
  \\boxed{3}`` states -3 and 3).

The final answer is the action, else the box that closes last, else the last answer line,
else a reply of one line of at most ``SHORT_LINE_CHARS`` characters; otherwise there is none,
however many numbers the text mentions (never "the last number anywhere"). Every other
statement must state the same value (the verifier decides, from ``Statements``), or the reply
hedges. So does prose that offers another value after a statement (``hedges``: ``The answer
is $\\boxed{2}$, or possibly 3.``, ``3 is also possible``): each value offered must equal the
final answer (``Statements.offers``); the working before the first statement is free.

The whole reply is read in time linear in its length: every pattern is linear, braces are
matched in one pass, a statement is cut at ``MAX_ANSWER_CHARS`` + 1 characters, at most
``MAX_ANSWER_CHARS`` either side of a box is looked at, and a reply with more than
``MAX_STATEMENTS`` different statements, or ``MAX_STATEMENT_COUNT`` in all, holds no answer.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass

from selfplay.verifiers.replies.box_holders import BOX, one_box, parts, reading
from selfplay.verifiers.replies.hedges import (
    HEDGE,
    MAX_OFFERS,
    Offer,
    hedge_detail,
    hedge_word,
    offers_in,
    prose_hedge_detail,
    prose_offers,
    too_many_offers,
)

__all__ = [
    "HEDGE",
    "ParseError",
    "Statements",
    "extract_answer",
    "find_statements",
    "hedge_detail",
    "hedge_word",
    "join_digit_groups",
    "prose_hedge_detail",
]

MAX_ANSWER_CHARS = 400
SHORT_LINE_CHARS = 200
MAX_STATEMENTS = 20  # distinct statements beyond the final one: more is a hedge by itself
MAX_STATEMENT_COUNT = 1000  # statements in all (boxes and answer lines): more is no answer

ANSWER_LINE = re.compile(
    r"(?im)\b(?:final[ \t]+answer|answer)[ \t]*(?:is\b[ \t]*:?|:|=)[ \t]*(?P<answer>\S[^\n]*)$"
)
ASK = re.compile(r"\s*ask\s*:", re.IGNORECASE)
COMMAND = re.compile(r"\\[A-Za-z]+|\\.")
FLAT_BRACES = re.compile(r"\{[^{}]*\}")
BRACES = re.compile(r"[{}]")
BULLET = re.compile(r"^\s*[-*+\u2022]\s+")
MATH_OPEN = re.compile(r"\$\$?|\\\(|\\\[")
MATH_CLOSE = {"$": re.compile(r"\$"), "$$": re.compile(r"\$\$"), "\\(": re.compile(r"\\\)")}
MATH_CLOSE["\\["] = re.compile(r"\\\]")
SPACES = re.compile(r"\s+")
# A digit group is 1,000 or 12,345,678: a first group of one to three digits not starting
# with 0, then groups of exactly three, all after the same separator (0,500 and 1,00 are not).
# Inside brackets a plain comma separates items ([1,100] is an interval), so it groups only
# outside them; the other separators group everywhere.
SEPARATOR = r"(?:,|\{,\}|\\,|\\ |\\thinspace\s*|[\u00a0\u2007\u2009\u202f])"
DIGIT_GROUPS = re.compile(
    rf"(?<![\d.])\d{{1,3}}(?P<sep>{SEPARATOR})\d{{3}}(?:(?P=sep)\d{{3}})*(?!\d|(?P=sep)\d)"
)
BRACKETS = re.compile(r"\\\{|\\\}|[(\[\])]")


class ParseError(ValueError):
    """The text holds no answer that can be read; the message says why."""


@dataclass(frozen=True)
class Statements:
    """The final answer of a reply and its other statements (each distinct one once)."""

    final: str
    boxes: tuple[str, ...] = ()  # other boxes, and holders a connective taints: answers
    lines: tuple[str, ...] = ()  # other answer lines and holders: prose when unreadable
    offers: tuple[Offer, ...] = ()  # values the prose offers: each must equal the final

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
    found = _boxes(text)  # (end, start, content or None), the last to close last
    matches = list(itertools.islice(ANSWER_LINE.finditer(text), MAX_STATEMENT_COUNT + 1))
    if len(found) + len(matches) > MAX_STATEMENT_COUNT:
        raise ParseError(
            f"the reply states an answer more than {MAX_STATEMENT_COUNT} times; state it once."
        )
    boxed = [BOX.search(m["answer"], 0, MAX_ANSWER_CHARS + 1) is not None for m in matches]
    plain = [m for m, has_box in zip(matches, boxed, strict=True) if not has_box]
    answer_holders = [
        (_cut(m["answer"]), "answer") for m, has_box in zip(matches, boxed, strict=True) if has_box
    ]
    around = _around_boxes(text, found)
    holders, several = [], []
    for holder in answer_holders + [h[:2] for h in around]:
        (holders if one_box(holder[0]) else several).append(holder)
    holders += [(part, "part") for text, _ in several for part in parts(text)]
    contents = [(box[2], "box") for box in found if box[2] is not None]
    read = _readings(contents + holders)
    boxes = [None if box[2] is None else read[box[2], "box"][0] for box in found]
    plain_lines = [_cut(m["answer"]) for m in plain]
    tainted = [read[h][0] for h in holders if read[h][1]]
    lines = [line.strip() for line in plain_lines]
    lines += [read[h][0].strip() for h in holders if not read[h][1]]
    if action is not None:
        final = action[0]
    elif boxes:
        final = boxes[-1]
        if final is None:
            raise ParseError(
                f"\\boxed{{ is never closed, or holds more than {MAX_ANSWER_CHARS} characters."
            )
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
    spans = [(start, end) for end, start, _ in found] + [m.span() for m in plain]
    spans += [h[2] for h in around if h[1] == "maths"]
    spans += [action[1]] if action is not None else []
    offers = prose_offers(text, spans) + [o for line in plain_lines for o in offers_in(line)]
    if len({offer.value for offer in offers}) > MAX_OFFERS:
        offers = [too_many_offers()]
    seen = {_key(final)}
    other_boxes = _distinct(["\\boxed{" if box is None else box for box in boxes] + tainted, seen)
    other_lines = _distinct(lines, seen)
    if len(other_boxes) + len(other_lines) > MAX_STATEMENTS:
        raise _too_many()
    offered = tuple(dict.fromkeys(offers))
    return Statements(final.strip(), tuple(other_boxes), tuple(other_lines), offered)


def join_digit_groups(text: str) -> str:
    """``text`` with each digit group joined into one number (``1,000`` is ``1000``); a plain
    comma inside brackets separates items (``[1,100]``, ``(1,000)`` is the pair 1, 0)."""
    if not DIGIT_GROUPS.search(text):
        return text
    depths = _bracket_depths(text)

    def joined(match: re.Match[str]) -> str:
        if unicodedata.digit(match.group()[0]) == 0:
            return match.group()  # 0,500 is not a number written in groups
        if match["sep"] == "," and depths[match.start()] > 0:
            return match.group()
        return re.sub(SEPARATOR, "", match.group())

    return DIGIT_GROUPS.sub(joined, text)


def _bracket_depths(text: str) -> list[int]:
    """How many brackets (``(``, ``[``, ``\\{``) are open at each index of ``text``."""
    depths, depth, last = [], 0, 0
    for bracket in BRACKETS.finditer(text):
        depths += [depth] * (bracket.start() - last)
        depth = depth + 1 if bracket.group() in ("(", "[", "\\{") else max(depth - 1, 0)
        depths += [depth] * (bracket.end() - bracket.start())
        last = bracket.end()
    return depths + [depth] * (len(text) - last + 1)


def _action(
    text: str, answer_pattern: re.Pattern[str] | str | None
) -> tuple[str, tuple[int, int]] | None:
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
    return _cut(span).strip(), last.span()


def _boxes(text: str) -> list[tuple[int, int, str | None]]:
    """(end, start, content) of every box (of the first ``MAX_STATEMENT_COUNT`` + 1), by where
    it ends: just past the closing brace. A box not closed within ``MAX_ANSWER_CHARS`` + 1
    characters (never closed, or too long to be an answer) has content None and ends with
    the text."""
    found: list[tuple[int, int, str | None]] = []
    for start in itertools.islice(BOX.finditer(text), MAX_STATEMENT_COUNT + 1):
        begin = start.end()
        if text[begin : begin + 1] == "{":
            end = _closing(text, begin, begin + MAX_ANSWER_CHARS + 2)
            if end < 0:
                found.append((len(text), start.start(), None))
            else:
                found.append((end + 1, start.start(), text[begin + 1 : end]))
        elif begin < len(text):  # \boxed1, \boxed\pi: one character or command, as in LaTeX
            command = COMMAND.match(text, begin)
            content = command.group() if command else text[begin]
            found.append((begin + len(content), start.start(), content))
        else:
            found.append((len(text), start.start(), None))
    found.sort()
    return found


def _closing(text: str, begin: int, limit: int) -> int:
    """The index of the ``}`` that closes the ``{`` at ``begin``, if it is before ``limit``."""
    flat = FLAT_BRACES.match(text, begin, limit)  # most boxes hold no braces
    if flat is not None:
        return flat.end() - 1
    depth = 0
    for brace in BRACES.finditer(text, begin, limit):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return brace.start()
    return -1


def _around_boxes(
    text: str, boxes: list[tuple[int, int, str | None]]
) -> list[tuple[str, str, tuple[int, int]]]:
    """(text, kind, span) of what holds each closed box on its line: the maths (``$...$``,
    ``\\(...\\)``, ``\\[...\\]``) around it, found by pairing the line's math delimiters from
    its start, and the line itself when it is short enough to be an answer (a leading
    Markdown bullet left out). Only ``MAX_ANSWER_CHARS`` either side of a box are looked at;
    maths on a line that starts further back is not looked for."""
    found = []
    for end, start, content in boxes:
        if content is None:
            continue
        reach = max(0, start - MAX_ANSWER_CHARS), min(len(text), end + MAX_ANSWER_CHARS)
        newline = text.rfind("\n", reach[0], start)
        low = newline + 1 if newline >= 0 else reach[0]
        high = text.find("\n", end, reach[1])
        high = reach[1] if high < 0 else high
        line_start = newline >= 0 or low == 0
        if line_start and text[high : high + 1] in ("", "\n"):
            line = BULLET.sub("", text[low:high], count=1)
            if len(line) <= MAX_ANSWER_CHARS:
                found.append((line, "line", (low, high)))
        maths = _maths_around(text, low, start, end, high) if line_start else None
        if maths is not None:
            found.append((_cut(text[maths[0] : maths[1]]), "maths", maths[2]))
    return found


def _maths_around(
    text: str, low: int, start: int, end: int, high: int
) -> tuple[int, int, tuple[int, int]] | None:
    """(inner start, inner end, span) of the maths that holds ``text[start:end]``: the
    delimiters from ``low`` on are paired in order, so a box after ``$a$`` is not in maths."""
    position = low
    while (opener := MATH_OPEN.search(text, position, start)) is not None:
        closer = MATH_CLOSE[opener.group()].search(text, opener.end(), high)
        if closer is None:
            return None
        if closer.start() >= end:
            return opener.end(), closer.start(), (opener.start(), closer.end())
        if closer.end() > start:
            return None  # a delimiter inside the box
        position = closer.end()
    return None


def _readings(statements: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, bool]]:
    """What each distinct (statement, kind) states, and whether a connective taints it
    (``box_holders.reading``); ParseError beyond ``MAX_STATEMENTS`` different readings."""
    read: dict[tuple[str, str], tuple[str, bool]] = {}
    keys: set[str] = set()
    for statement in dict.fromkeys(statements):
        read[statement] = reading(*statement)
        keys.add(_key(read[statement][0]))
        if len(keys) > MAX_STATEMENTS + 1:
            raise _too_many()
    return read


def _too_many() -> ParseError:
    return ParseError(
        f"the reply states more than {MAX_STATEMENTS} different final answers; a reply must "
        "state exactly one final answer."
    )


def _cut(span: str) -> str:
    return span[: MAX_ANSWER_CHARS + 1]


def _key(statement: str) -> str:
    return SPACES.sub(" ", statement).strip().removesuffix(".").strip()


def _distinct(statements, seen: set[str]) -> list[str]:
    kept = []
    for statement in dict.fromkeys(statements):
        key = _key(statement)
        if key not in seen:
            seen.add(key)
            kept.append(statement.strip())
    return kept
