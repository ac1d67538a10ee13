"""Find the final answer in a model's text (shared by the math, exact and numeric verifiers).

The rules, with tables, are in docs/verifiers.md (section 1). A reply's answer statements:

- the game's action, when the caller passes its answer format (``answer_pattern``): the last
  span of that format (earlier spans are working); a last span ``[ask: ...]`` is a question,
  so the reply has no answer;
- every ``\\boxed{...}`` and ``\\fbox{...}`` (``\\boxed {...}``; ``\\boxed1`` boxes one
  character or command, as LaTeX reads it);
- every answer line (``answer: ...``, ``answer is ...``, ``the final answer is ...``);
- what holds a box: an outer box, an answer line, the maths (``$...$``, ``\\(...\\)``,
  ``\\[...\\]``) around it, a short line; read with the box's content in its place
  (``\\boxed{3 - \\boxed{1}}`` states ``3 - 1`` and 1), or as the box alone where the box is
  one whole side of an equation (``$P(A) = \\boxed{1/2}$``). One that cannot be read is prose.

The final answer is the action, else the box that closes last, else the last answer line,
else a reply of one line of at most ``SHORT_LINE_CHARS`` characters; otherwise there is none,
however many numbers the text mentions (never "the last number anywhere"). Every other
statement must state the same value (the verifier decides, from ``Statements``), or the reply
hedges. So does prose that offers another value: after a statement, up to the next one, a
hedge word (``HEDGE_WORDS``) followed by a value (a digit, a number word, maths), as in ``The
answer is $\\boxed{2}$, or possibly 3.`` (``Statements.hedge``); the working before the first
statement is free.

The whole reply is read in time linear in its length: every pattern is linear, braces are
matched in one pass, a statement is cut at ``MAX_ANSWER_CHARS`` + 1 characters, at most
``MAX_ANSWER_CHARS`` either side of a box is looked at, and a reply with more than
``MAX_STATEMENTS`` different statements, or ``MAX_STATEMENT_COUNT`` in all, holds no answer.
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from dataclasses import dataclass

MAX_ANSWER_CHARS = 400
SHORT_LINE_CHARS = 200
MAX_STATEMENTS = 20  # distinct statements beyond the final one: more is a hedge by itself
MAX_STATEMENT_COUNT = 1000  # statements in all (boxes and answer lines): more is no answer

ANSWER_LINE = re.compile(
    r"(?im)\b(?:final[ \t]+answer|answer)[ \t]*(?:is\b[ \t]*:?|:|=)[ \t]*(?P<answer>\S[^\n]*)$"
)
BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])[ \t]*")
ASK = re.compile(r"\s*ask\s*:", re.IGNORECASE)
COMMAND = re.compile(r"\\[A-Za-z]+|\\.")
FLAT_BRACES = re.compile(r"\{[^{}]*\}")
BRACES = re.compile(r"[{}]")
BULLET = re.compile(r"^\s*[-*+\u2022]\s+")
MATH_OPEN = re.compile(r"\$\$?|\\\(|\\\[")
MATH_CLOSE = {"$": re.compile(r"\$"), "$$": re.compile(r"\$\$"), "\\(": re.compile(r"\\\)")}
MATH_CLOSE["\\["] = re.compile(r"\\\]")
SIDE_END = re.compile(r"[\s$.,;]*(?:\\[)\]][\s$.,;]*)?$")  # after a box that ends a statement
EQUALS_BEFORE = re.compile(r"(?<![<>!=])=[\s$]*\Z")
SPACES = re.compile(r"\s+")
# Matched on lowered text (case-blind patterns are slow on long replies).
HEDGE_WORDS = re.compile(
    r"\b(?:or|maybe|possibly|perhaps|probably|either|alternatively|otherwise|unless)\b"
)
NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred thousand million billion half halves third thirds quarter quarters"
)
VALUE_MARK = re.compile(r"[\d$]|\\[(\[a-z]")  # a digit, or maths
NUMBER_WORD = re.compile(rf"(?<![a-z0-9_])(?:{'|'.join(NUMBER_WORDS.split())})(?![a-z0-9_])")
# A digit group is 1,000 or 12,345,678: a first group of one to three digits not starting
# with 0, then groups of exactly three, all after the same separator (0,500 and 1,00 are not).
SEPARATOR = r"(?:,|\{,\}|\\,|\\ |\\thinspace\s*|[\u00a0\u2007\u2009\u202f])"
DIGIT_GROUPS = re.compile(
    rf"(?<![\d.])\d{{1,3}}(?P<sep>{SEPARATOR})\d{{3}}(?:(?P=sep)\d{{3}})*(?!\d|(?P=sep)\d)"
)


class ParseError(ValueError):
    """The text holds no answer that can be read; the message says why."""


@dataclass(frozen=True)
class Statements:
    """The final answer of a reply and its other statements (each distinct one once)."""

    final: str
    boxes: tuple[str, ...] = ()  # other boxed statements: a box always states an answer
    lines: tuple[str, ...] = ()  # other answer lines: prose when the grammar cannot read them
    hedge: str = ""  # prose that offers another value ("or possibly 3"), if any

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
    holders = [_cut(m["answer"]) for m, has_box in zip(matches, boxed, strict=True) if has_box]
    holders = [line for line in holders + _around_boxes(text, found) if _one_box(line)]
    raw_lines = [_cut(m["answer"]) for m in plain] + holders
    read = _readings([box[2] for box in found if box[2] is not None] + raw_lines)
    boxes = [None if box[2] is None else read[box[2]] for box in found]
    lines = [read[line].strip() for line in raw_lines]
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
    spans += [action[1]] if action is not None else []
    hedge = _prose_hedge(text, spans) or _hedged_line(raw_lines[: len(plain)], holders, matches)
    seen = {_key(final)}
    other_boxes = _distinct(("\\boxed{" if box is None else box for box in boxes), seen)
    other_lines = _distinct(lines, seen)
    if len(other_boxes) + len(other_lines) > MAX_STATEMENTS:
        raise _too_many()
    return Statements(final.strip(), tuple(other_boxes), tuple(other_lines), hedge)


def unboxed(statement: str) -> str:
    """What a statement holding boxes states: the box alone where it is one whole side of an
    equation (``P(A) = \\boxed{1/2}`` states 1/2), else the whole statement with each box
    read as its content (``3 - \\boxed{1}`` states ``3 - 1``, ``\\boxed{\\boxed{3}}`` 3)."""
    boxes = list(BOX.finditer(statement))
    if not boxes:
        return statement
    pairs = _matching_braces(statement)
    last, close = boxes[-1], pairs.get(boxes[-1].end())
    side = close is not None and SIDE_END.match(statement, close + 1) is not None
    if side and EQUALS_BEFORE.search(statement, 0, last.start()):
        return unboxed(statement[last.end() + 1 : close])
    dropped: dict[int, str] = {}
    for box in boxes:
        dropped.update(dict.fromkeys(range(box.start(), box.end()), ""))
        dropped[box.start()] = " "  # 2\boxed{3} is not 23
        if box.end() in pairs:
            dropped[box.end()] = dropped[pairs[box.end()]] = ""
    return "".join(dropped.get(i, char) for i, char in enumerate(statement))


def join_digit_groups(text: str) -> str:
    """``text`` with each digit group joined into one number (``1,000`` is ``1000``)."""

    def joined(match: re.Match[str]) -> str:
        if unicodedata.digit(match.group()[0]) == 0:
            return match.group()  # 0,500 is not a number written in groups
        return re.sub(SEPARATOR, "", match.group())

    return DIGIT_GROUPS.sub(joined, text)


def offered_value(text: str, start: int = 0, end: int | None = None) -> str:
    """The part of ``text[start:end]`` from a hedge word followed by a value ("or possibly
    3"), or "" when there is none. Linear: the first hedge word is the only one to try."""
    low = text[start:end].lower()
    hedge = HEDGE_WORDS.search(low)
    if hedge is None or not _holds_value(low, hedge.end(), len(low)):
        return ""
    return SPACES.sub(" ", text[start + hedge.start() : start + hedge.start() + 60]).strip()


def _holds_value(low: str, start: int, end: int) -> bool:
    """Whether ``low[start:end]`` (lowered) holds a digit, maths, or a number word."""
    found = VALUE_MARK.search(low, start, end) or NUMBER_WORD.search(low, start, end)
    return found is not None


def prose_hedge_detail(offered: str) -> str:
    """The verdict detail for a reply whose prose offers another value."""
    return f"the reply hedges: it offers another value ({offered!r}); state one answer."


def hedge_detail(values: list[str]) -> str:
    """The verdict detail for a reply that states different answers."""
    shown = ", ".join(repr(value[:30]) for value in values[:3])
    return (
        f"the reply states {len(values)} different final answers ({shown}); a reply must "
        "state exactly one final answer (repeating the same value is fine)."
    )


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


def _hedged_line(plain: list[str], holders: list[str], matches: list[re.Match[str]]) -> str:
    """What an answer line offers besides its answer: a hedge word followed by a value
    (``answer: 2 or 3``), or, on a line that states its answer with one box, any hedge word
    (``Answer: 3, or \\boxed{2}``)."""
    offered = next(filter(None, map(offered_value, plain)), "")
    answer_holders = {_cut(m["answer"]) for m in matches}
    for line in holders:
        hedge = HEDGE_WORDS.search(line.lower()) if line in answer_holders else None
        if not offered and hedge is not None:
            offered = SPACES.sub(" ", line[hedge.start() : hedge.start() + 60]).strip()
    return offered


def _one_box(statement: str) -> bool:
    """Whether ``statement`` holds one box (with any boxes inside it), not several in a row."""
    boxes = list(BOX.finditer(statement))
    if not boxes:
        return False
    begin = boxes[0].end()
    close = begin + 1  # \boxed1: one character
    if statement[begin : begin + 1] == "{":
        close = _matching_braces(statement).get(begin, len(statement))
    return all(box.start() < close for box in boxes[1:])


def _around_boxes(text: str, boxes: list[tuple[int, int, str | None]]) -> list[str]:
    """What holds each closed box on its line: the maths (``$...$``, ``\\(...\\)``, ``\\[...\\]``)
    around it, and the line itself when it is short enough to be an answer (a leading
    Markdown bullet left out): ``$3 - \\boxed{1}$`` and a line ``3 - \\boxed{1}`` state 3 - 1.
    Only ``MAX_ANSWER_CHARS`` either side of a box are looked at."""
    found = []
    for end, start, content in boxes:
        if content is None:
            continue
        reach = max(0, start - MAX_ANSWER_CHARS), min(len(text), end + MAX_ANSWER_CHARS)
        newline = text.rfind("\n", reach[0], start)
        low = newline + 1 if newline >= 0 else reach[0]
        high = text.find("\n", end, reach[1])
        high = reach[1] if high < 0 else high
        whole_line = (newline >= 0 or low == 0) and text[high : high + 1] in ("", "\n")
        if whole_line:
            line = BULLET.sub("", text[low:high], count=1)
            if len(line) <= MAX_ANSWER_CHARS:
                found.append(line)
        openers = list(MATH_OPEN.finditer(text, low, start))
        closer = openers and MATH_CLOSE[openers[-1].group()].search(text, end, high)
        if closer:
            found.append(_cut(text[openers[-1].end() : closer.start()]))
    return found


def _readings(statements: list[str]) -> dict[str, str]:
    """What each distinct statement states (``unboxed``); ParseError beyond the cap."""
    read: dict[str, str] = {}
    keys: set[str] = set()
    for statement in dict.fromkeys(statements):
        keys.add(_key(statement))
        if len(keys) > MAX_STATEMENTS + 1:
            raise _too_many()
        read[statement] = unboxed(statement)
    return read


def _too_many() -> ParseError:
    return ParseError(
        f"the reply states more than {MAX_STATEMENTS} different final answers; a reply must "
        "state exactly one final answer."
    )


def _prose_hedge(text: str, spans: list[tuple[int, int]]) -> str:
    """What the text after a statement, up to the next statement, offers as another value.
    The gaps between statements are read as one string, each gap once: linear."""
    gaps, ends, reach, length = [], [], -1, 0
    for start, end in sorted(spans):
        if reach >= 0 and start > reach + 1:
            gaps.append(text[reach:start])
            length += start - reach
            ends.append(length)
        reach = max(reach, end)
    if reach < len(text) - 1:
        gaps.append(text[reach:])
        ends.append(length + len(text) - reach)
    between = "".join(gaps)
    low, start = between.lower(), 0
    while (hedge := HEDGE_WORDS.search(low, start)) is not None:
        gap = bisect.bisect_right(ends, hedge.start())  # the gap it is in, looked at once
        if _holds_value(low, hedge.end(), ends[gap]):
            return SPACES.sub(" ", between[hedge.start() : hedge.start() + 60]).strip()
        start = ends[gap]
    return ""


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
    for statement in dict.fromkeys(statements):
        key = _key(statement)
        if key not in seen:
            seen.add(key)
            kept.append(statement.strip())
    return kept
