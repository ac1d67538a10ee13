"""What a statement that holds a box states: the box alone, or the whole with the box in it.

A box is held by another box, by an answer line, by the maths (``$...$``, ``\\(...\\)``,
``\\[...\\]``) around it or by a short line (``answers``). What the holder states:

- the box alone where the box is the whole holder (``\\boxed{\\boxed{3}}``) or one whole side
  of an equation at its end (``$P(A) = \\boxed{1/2}$``, ``$n = 2k + 1 = \\boxed{7}$``), unless
  the other side holds a connective (``$x = 1 \\text{ or } x = \\boxed{2}$``, ``$\\text{not } x
  = \\boxed{3}$``) or, in maths or a box, a list (``$x = 1, x = \\boxed{2}$``);
- otherwise the whole holder with each box read as its content (``3 - \\boxed{1}`` states
  ``3 - 1``; ``\\boxed{7} = 3 + 4`` states ``7 = 3 + 4``).

A connective is a word or mark that changes what the box states: a disjunction, a negation,
``\\pm``, an approximation (``CONNECTIVE_WORDS``, ``CONNECTIVE_COMMANDS``,
``CONNECTIVE_MARKS``), matched as it looks (``lookalikes.fold``; a word mixing Latin letters
with another script's counts as one). A holder is **tainted** when it holds one where it
bears on the box: anywhere in the maths around a box (and a list on the other side of its
equation: ``$x = 1; x = \\boxed{2}$``), or, on a line, right before the box
(``It is 3 or \\boxed{2}``, ``x = \\pm\\boxed{3}``) or on the other side of its equation;
on an answer line, a hedge word anywhere before the box (``Answer: 3, or \\boxed{2}``). The
verifier reads a tainted holder as an answer of its own (one the grammar cannot read is a
different answer), where an untainted line the grammar cannot read is prose.
"""

from __future__ import annotations

import itertools
import re

from selfplay.verifiers.replies.hedges import HEDGE
from selfplay.verifiers.replies.lookalikes import MIXED_WORD, fold

BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])[ \t]*")
SIDE_END = re.compile(r"[\s$.,;]*(?:\\[)\]][\s$.,;]*)?$")  # after a box that ends a statement
EQUALS_BEFORE = re.compile(r"(?<![<>!=])=[\s$]*\Z")
CONNECTIVE_WORDS = (
    "or and not nor neither either unless except otherwise else if iff maybe possibly perhaps "
    "probably alternatively instead also plus minus xor approximately approx about roughly "
    "nearly around least most more less than never"
)
CONNECTIVE_COMMANDS = (
    "pm mp lor vee bigvee land wedge bigwedge neg lnot not approx sim simeq approxeq "
    "thickapprox thicksim quad qquad"
)
CONNECTIVE_MARKS = "\u00b1\u2213\u2228\u2227\u00ac\u2248\u223c\u2243"  # ± ∓ ∨ ∧ ¬ ≈ ∼ ≃
CONNECTIVE = (
    rf"\b(?:{'|'.join(CONNECTIVE_WORDS.split())})\b"
    rf"|\\(?:{'|'.join(CONNECTIVE_COMMANDS.split())})(?![a-z])"
    rf"|[{CONNECTIVE_MARKS}]|{MIXED_WORD}"
)
CONNECTIVES = re.compile(CONNECTIVE)
# A connective right before the box: only spaces, maths openers and braces between them.
RIGHT_BEFORE = re.compile(rf"(?:{CONNECTIVE})(?:[\s$(){{}}]|\\[()\[,;:! ]|\\text\w*)*\Z")
CLAUSE_END = re.compile(r"(?s:.*)(?:[,;:]|[.!?](?=\s))")


def reading(statement: str, kind: str) -> tuple[str, bool]:
    """(what ``statement`` states, whether it is tainted) for a statement of ``kind``: the
    content of a ``"box"``, the ``"maths"`` around a box, a short ``"line"``, an ``"answer"``
    line or a ``"part"`` of a holder of several boxes (``parts``), by the rules above."""
    boxes = list(BOX.finditer(statement))
    if not boxes:
        return statement, False
    pairs = matching_braces(statement)
    last, close = boxes[-1], pairs.get(boxes[-1].end())
    end = len(statement) if close is None else close + 1
    before = statement[: last.start()]
    tainted = _tainted(kind, before, statement[end:])
    equals = EQUALS_BEFORE.search(before)
    if close is not None and equals is not None and SIDE_END.match(statement, end):
        left = before[: equals.start()]
        if kind in ("maths", "box"):
            tainted = tainted or (kind == "maths" and _top_level_list(left))
            blocked = tainted or _connective(left) or _top_level_list(left)
        else:  # prose around: only the clause before the equation counts
            clause = CLAUSE_END.match(left)
            blocked = _connective(left[clause.end() if clause else 0 :])
            tainted = tainted or (blocked and kind != "part")
        if not blocked:
            return reading(statement[last.end() + 1 : close], "box")[0], tainted
    return _in_place(statement, boxes, pairs), tainted


def parts(statement: str) -> list[str]:
    """A holder of several boxes side by side cut into one part per box, each from the end of
    the box before (``x = -\\boxed{3} or \\boxed{3}``: ``x = -\\boxed{3}`` and ``or
    \\boxed{3}``); the last part runs to the holder's end."""
    pairs, cuts, close = matching_braces(statement), [0], -1
    for box in BOX.finditer(statement):
        if box.start() > close:  # not inside the box before
            braced = statement[box.end() : box.end() + 1] == "{"
            close = pairs.get(box.end(), len(statement)) if braced else box.end()
            cuts.append(close + 1)
    cuts[-1] = len(statement)
    return [statement[start:end] for start, end in itertools.pairwise(cuts) if start < end]


def _tainted(kind: str, before: str, after: str) -> bool:
    """Whether a connective bears on the box, before the side rule is looked at."""
    if kind == "maths":
        return _connective(before + " " + after)
    if kind in ("line", "answer") and RIGHT_BEFORE.search(_words(before)):
        return True
    return kind == "answer" and HEDGE.search(_words(before)) is not None  # Answer: 3, or \boxed{2}


def one_box(statement: str) -> bool:
    """Whether ``statement`` holds one box (with any boxes inside it), not several in a row."""
    boxes = list(BOX.finditer(statement))
    if not boxes:
        return False
    begin = boxes[0].end()
    close = begin + 1  # \boxed1: one character
    if statement[begin : begin + 1] == "{":
        close = matching_braces(statement).get(begin, len(statement))
    return all(box.start() < close for box in boxes[1:])


def matching_braces(text: str) -> dict[int, int]:
    """The index of the ``}`` that closes each ``{`` (one pass; unclosed ones are absent)."""
    pairs, stack = {}, []
    for match in re.finditer(r"[{}]", text):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            pairs[stack.pop()] = match.start()
    return pairs


def _in_place(statement: str, boxes: list[re.Match[str]], pairs: dict[int, int]) -> str:
    """The statement with each box read as its content (``2\\boxed{3}`` is ``2 3``)."""
    dropped: dict[int, str] = {}
    for box in boxes:
        dropped.update(dict.fromkeys(range(box.start(), box.end()), ""))
        dropped[box.start()] = " "  # 2\boxed{3} is not 23
        if box.end() in pairs:
            dropped[box.end()] = dropped[pairs[box.end()]] = ""
    return "".join(dropped.get(i, char) for i, char in enumerate(statement))


def _words(text: str) -> str:
    return fold(text).lower()


def _connective(text: str) -> bool:
    return CONNECTIVES.search(_words(text)) is not None


def _top_level_list(text: str) -> bool:
    """Whether ``text`` has a comma or semicolon outside every bracket (``x = 1, x``)."""
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char in ",;" and depth == 0:
            return True
    return False
