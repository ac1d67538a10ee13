"""Find the final answer in a model's text (shared by the math, exact and numeric verifiers).

The extraction rule. A reply states its answer explicitly; its answer statements are

- the game's action, when the caller passes the game's answer format (``answer_pattern``,
  e.g. the ``[...]`` span of the maths games): the last span of that format, as in every
  game (earlier spans are working, not statements). A clarification request
  (``[ask: ...]``) is a question, not an answer: a reply whose last span is one has none;
- every ``\\boxed{...}`` and ``\\fbox{...}`` (also ``\\boxed {...}``, and ``\\boxed1``,
  which boxes one character or command, as LaTeX reads it). A box inside a box is a
  statement of its own, and the outer box states its whole content with the inner box read
  as its content: ``\\boxed{\\boxed{3}}`` states 3 twice, ``\\boxed{3 - \\boxed{1}}``
  states ``3 - 1`` and 1, which differ;
- every line that states an answer: ``answer: ...``, ``answer is ...``, ``final answer:
  ...``, ``the final answer is ...`` (its boxes read as their content there too, so
  ``Answer: x \\ne \\boxed{3}`` states ``x \\ne 3`` and 3).

The final answer is the action when there is one, else the box that closes last, else the
last answer line; a reply with none of these that is a single line of at most ``SHORT_LINE_CHARS``
characters is its own answer (whether it is one is then for the grammar to say). Anything
else has no answer, however many numbers it mentions: a reward must never go to "the last
number anywhere" (``"I cannot solve this.\\nSee page 1"`` holds no answer 1).

One final answer. Every other statement must state the same value as the final answer
(``\\boxed{1/2}`` and ``Answer: 0.5`` agree); a reply that states different answers
(``\\boxed{1} or \\boxed{2}``, two answer lines that differ) hedges and fails, whichever of
them is right. Deciding "the same value" is the verifier's job, so this module hands it the
final answer and the other statements (``Statements``).

No other value in prose. After a statement, up to the next one or the end of the reply, a
hedge word (``HEDGE_WORDS``: or, maybe, possibly, ...) followed by a value (a digit, a
number word, or maths: ``$``, ``\\(``, a LaTeX command) offers another answer: ``The
answer is $\\boxed{2}$, or possibly 3.`` hedges (``Statements.hedge``). The working before
the first statement is free; a restatement goes in a statement of its own
(``\\boxed{1/2} or \\boxed{0.5}``).

The whole reply is read, however long, in time linear in its length: every pattern here
is linear, braces are matched in one pass, a statement is cut at ``MAX_ANSWER_CHARS`` + 1
characters (longer is not an answer anyway), and a reply with more than ``MAX_STATEMENTS``
different statements, or ``MAX_STATEMENT_COUNT`` in all, holds no answer.
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
MATH_OPEN = re.compile(r"\$\$?|\\\(|\\\[")
MATH_CLOSE = {"$": re.compile(r"\$"), "$$": re.compile(r"\$\$"), "\\(": re.compile(r"\\\)")}
MATH_CLOSE["\\["] = re.compile(r"\\\]")
SIDE_END = re.compile(r"[\s$.,;]*(?:\\[)\]][\s$.,;]*)?$")  # after a box that ends a statement
EQUALS_BEFORE = re.compile(r"(?<![<>!=])=[\s$]*\Z")
SPACES = re.compile(r"\s+")
HEDGE_WORDS = re.compile(
    r"\b(?:or|maybe|possibly|perhaps|probably|either|alternatively|otherwise|unless)\b",
    re.IGNORECASE,
)
NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred thousand million billion half halves third thirds quarter quarters"
)
VALUE = re.compile(rf"\d|\$|\\[(\[A-Za-z]|\b(?:{'|'.join(NUMBER_WORDS.split())})\b", re.IGNORECASE)
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
    raw_lines = [_cut(m["answer"]) for m in matches] + _math_around_boxes(text, found)
    read = _readings([box[2] for box in found if box[2] is not None] + raw_lines)
    boxes = [None if box[2] is None else read[box[2]] for box in found]
    lines = [read[line].strip() for line in raw_lines]
    if action is not None:
        final = action[0]
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
    spans = [(start, end) for end, start, _ in found] + [m.span() for m in matches]
    spans += [action[1]] if action is not None else []
    hedge = _prose_hedge(text, spans) or next(filter(None, map(offered_value, read.values())), "")
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
    end = len(text) if end is None else end
    hedge = HEDGE_WORDS.search(text, start, end)
    if hedge is None or VALUE.search(text, hedge.end(), end) is None:
        return ""
    return SPACES.sub(" ", text[hedge.start() : min(end, hedge.start() + 60)]).strip()


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
    it ends: just past the closing brace; a box never closed has content None and ends with
    the text."""
    found: list[tuple[int, int, str | None]] = []
    closing: dict[int, int] | None = None
    for start in itertools.islice(BOX.finditer(text), MAX_STATEMENT_COUNT + 1):
        begin = start.end()
        if begin >= len(text):
            found.append((len(text), start.start(), None))
        elif text[begin] == "{":
            simple = FLAT_BRACES.match(text, begin)  # most boxes hold no braces
            if simple is not None:
                end = simple.end() - 1
            else:
                closing = _matching_braces(text) if closing is None else closing
                end = closing.get(begin, -1)
            if end < 0:
                found.append((len(text), start.start(), None))
            else:
                cut = min(end, begin + 2 + MAX_ANSWER_CHARS)
                found.append((end + 1, start.start(), text[begin + 1 : cut]))
        else:  # \boxed1, \boxed\pi: one character or one command, as LaTeX reads it
            command = COMMAND.match(text, begin)
            content = command.group() if command else text[begin]
            found.append((begin + len(content), start.start(), content))
    found.sort()
    return found


def _math_around_boxes(text: str, boxes: list[tuple[int, int, str | None]]) -> list[str]:
    """The maths (``$...$``, ``\\(...\\)``, ``\\[...\\]``) around each closed box, as far as
    ``MAX_ANSWER_CHARS`` either side on its line: ``$3 - \\boxed{1}$`` states ``3 - 1``."""
    found = []
    for end, start, content in boxes:
        if content is None:
            continue
        low = max(text.rfind("\n", 0, start) + 1, start - MAX_ANSWER_CHARS)
        high = text.find("\n", end, end + MAX_ANSWER_CHARS)
        high = min(len(text), end + MAX_ANSWER_CHARS) if high < 0 else high
        openers = list(MATH_OPEN.finditer(text, low, start))
        if not openers:
            continue
        opener = openers[-1]
        closer = MATH_CLOSE[opener.group()].search(text, end, high)
        if closer is not None:
            found.append(_cut(text[opener.end() : closer.start()]))
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
    checked = -1
    for hedge in HEDGE_WORDS.finditer(between):
        gap = bisect.bisect_right(ends, hedge.start())
        if gap != checked:
            checked = gap
            offered = offered_value(between, hedge.start(), ends[gap])
            if offered:
                return offered
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
