"""The syntax of an answer: normalisation, a strict tokeniser, the vocabulary, capped values.

Normalisation undoes the ways one answer is written differently, and nothing else:

- Unicode look-alikes become their plain forms: every minus and dash (``−`` ``‐`` ``‑``
  ``‒`` ``–`` ``—``), ``×`` ``·`` ``÷`` ``π`` ``∞`` ``√`` ``≤`` ``≥`` ``≠`` ``∪`` ``∩`` ``ℝ``;
  superscripts are powers (``2²`` is ``2^{2}``, ``10⁻³`` is ``10^{-3}``), vulgar fractions
  are fractions (``½``; ``2½`` is the mixed number 5/2), and the rest is read in Unicode's
  compatibility form (full-width digits are digits);
- math delimiters (``$``, ``\\(``, ``\\[``), ``\\displaystyle``, ``\\left``/``\\right``, LaTeX
  spacing (``\\,`` ``\\;`` ``\\!`` ``~`` ``\\quad``) and degree marks are dropped;
- digit groups are joined: ``1,000``, ``1\\,000``, ``1{,}000``, ``1\\ 000`` and 1000 split by a
  no-break, narrow no-break, thin or figure space are 1000 (``answers.join_digit_groups``: a
  first group of one to three digits not starting with 0, then groups of exactly three after
  one separator; ``0,500`` is the list 0, 500, a plain space never groups, and inside
  brackets a plain comma separates items: ``[1,100]`` is an interval);
- ``\\text{...}``, ``\\mathrm{...}``, ``\\textbf{...}``, ``\\mbox{...}`` and friends give their
  content (``\\text{3}`` is 3);
- a unit word after the number (``cm``, ``dollars``, ``degrees``, ``square units``, ``cm^2``,
  ...) and a final full stop are dropped; ``percent`` becomes ``%``.

The tokeniser then accepts only numbers, the operators of the grammar, LaTeX commands (which
the parser whitelists by name, from the vocabulary below) and ASCII letters; any other
character is a ParseError naming it, so no text reaches anything but our own parser. Values
are built only through the capped constructors of ``math_values``, which refuse numbers,
powers and factorials too large to compare cheaply.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

import sympy

from selfplay.verifiers.answers import MAX_ANSWER_CHARS, ParseError, join_digit_groups
from selfplay.verifiers.math_values import TooLarge, exponential, power

UNICODE = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d", "-"),
        "\u2044": "/",
        "\u211d": "\\mathbb{R}",
        "\u00d7": "*",
        "\u00b7": "*",
        "\u22c5": "*",
        "\u00f7": "/",
        "\u03c0": "\\pi ",
        "\u221e": "\\infty ",
        "\u221a": "\\sqrt ",
        "\u2264": "<=",
        "\u2265": ">=",
        "\u2260": "!=",
        "\u222a": "\\cup ",
        "\u2229": "\\cap ",
        "\u2208": "\\in ",
        "\u00b0": "",
        "\u2205": "\\emptyset ",
    }
)
DELIMITERS = re.compile(r"\$|\\\(|\\\)|\\\[|\\\]|\\displaystyle|\\left\b|\\right\b|\\big+[lr]?\b")
TEXT_COMMANDS = re.compile(
    r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}"
)
SUPERSCRIPT = re.compile("[\u2070\u00b9\u00b2\u00b3\u2074-\u207b]+")
SUPERSCRIPT_PLAIN = str.maketrans(
    "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b", "0123456789+-"
)
VULGAR = re.compile("[\u00bc-\u00be\u2150-\u215e\u2189]")
SPACING = re.compile(r"\\[,;:! ]|\\q?quad\b|~|\^\s*\{?\s*\\circ\s*\}?|\\circ\b")
UNITS = (
    "cm|mm|km|kg|mg|ml|meters?|metres?|centimeters?|kilometers?|inches|inch|feet|foot|ft|"
    "miles?|mph|hours?|hrs?|minutes?|mins?|seconds?|secs?|days?|weeks?|years?|dollars?|"
    "cents?|euros?|pounds?|degrees?|units?|points?|people|students|ways|cubic|square|sq"
)
UNIT_POWER = r"(?:\s*\^\s*\{?\s*[23]\s*\}?)?"  # cm^2, m^{3}
TRAILING_UNITS = re.compile(
    rf"(?<=[\d}}).\s])\s*(?:\b(?:{UNITS})\b{UNIT_POWER}\.?\s*)+$", re.IGNORECASE
)
PERCENT_WORD = re.compile(r"\s*\b(?:percent|per\s+cent|percentage|pct)\b\s*$", re.IGNORECASE)

TOKEN = re.compile(
    r"(?P<space>\s+)"
    r"|(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<cmd>\\[A-Za-z]+|\\[{}%])"
    r"|(?P<name>[A-Za-z]+)"
    r"|(?P<op>\*\*|!!|<=|>=|!=|[-+*/^()!{}\[\],<>=|%])"
)
Token = tuple[str, str]
MAX_DEPTH = 30

# ---- the vocabulary: every name and command the parser knows ---------------------------------

FUNCTIONS: dict[str, Callable[[sympy.Expr], sympy.Expr]] = {
    "sqrt": lambda value: power(value, sympy.Rational(1, 2)),
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "log": sympy.log,
    "ln": sympy.log,
    "exp": exponential,
    "abs": sympy.Abs,
}
CONSTANTS = {"pi": sympy.pi, "e": sympy.E, "i": sympy.I, "oo": sympy.oo}
# Words for a value, in any letter case: infinity is a value; "not a number" and "does not
# exist" say there is none, and are never read as products of letters (nan is not n*a*n).
INFINITY_WORDS = frozenset(("inf", "infty", "infinity"))
NOT_A_NUMBER_WORDS = frozenset(("nan", "dne"))
LATEX_FUNCTIONS = {"\\" + name for name in ("sqrt", "sin", "cos", "tan", "log", "ln", "exp")}
LATEX_CONSTANTS = {"\\pi": sympy.pi, "\\infty": sympy.oo, "\\infinity": sympy.oo}
LATEX_EMPTY = {"\\emptyset", "\\varnothing"}
TIMES = {"*", "\\cdot", "\\times"}
DIVIDE = {"/", "\\div"}
FRACTIONS = {"\\frac", "\\dfrac", "\\tfrac", "\\cfrac"}
BINOMIALS = {"\\binom", "\\dbinom", "\\tbinom"}
SET_OPS = {"\\cup", "\\cap", "\\setminus"}
RELATIONS = {
    **dict.fromkeys(("<", "\\lt"), "<"),
    **dict.fromkeys(("<=", "\\le", "\\leq", "\\leqslant"), "<="),
    **dict.fromkeys((">", "\\gt"), ">"),
    **dict.fromkeys((">=", "\\ge", "\\geq", "\\geqslant"), ">="),
    **dict.fromkeys(("!=", "\\ne", "\\neq"), "!="),
    "=": "=",
    "\\in": "in",
}
# Short words that are prose or functions outside the grammar, never a product of letters
# (``xy`` is x times y; ``or`` in "2 or 3" is not o times r).
WORDS_TEXT = (
    "an and are as at be but by can do for get got has he if in is it its let may no nor "
    "not now of on or our out so the to too two us was we yes yet you all any one six ten "
    "few per via way new old off own see say set use sum max min mod gcd lcm arg det deg "
    "lim sec csc cot sgn erf tg ctg arc sin cos tan log ln exp abs sqrt"
)
WORDS = frozenset(WORDS_TEXT.split())
NUMBER_SETS = {"R": sympy.S.Reals, "Z": sympy.S.Integers, "Q": sympy.S.Rationals}
NOT_A_FACTOR = TIMES | DIVIDE | SET_OPS | set(RELATIONS) | {"\\}", "\\%", "\\over", "\\choose"}


def normalise(answer: str) -> str:
    """One spelling for each way of writing the same answer (see the module docstring)."""
    answer = SUPERSCRIPT.sub(lambda m: "^{" + m.group().translate(SUPERSCRIPT_PLAIN) + "}", answer)
    answer = VULGAR.sub(_vulgar, answer).translate(UNICODE)
    answer = DELIMITERS.sub(" ", answer)
    for _ in range(3):  # nested \text{\textbf{3}}
        answer = TEXT_COMMANDS.sub(lambda m: f" {m.group(1)} ", answer)
    answer = unicodedata.normalize("NFKC", join_digit_groups(answer))
    answer = SPACING.sub(" ", answer).strip()
    answer = answer.removesuffix(".").strip()
    answer = PERCENT_WORD.sub("%", answer)
    stripped = TRAILING_UNITS.sub("", answer).strip()
    return stripped if stripped else answer


def _vulgar(match: re.Match[str]) -> str:
    numerator, _, denominator = unicodedata.normalize("NFKC", match.group()).partition("\u2044")
    return f" \\frac{{{numerator}}}{{{denominator}}}"


def tokenize(answer: str) -> list[Token]:
    """The tokens of a normalised answer; ParseError for any character outside the grammar."""
    if len(answer) > MAX_ANSWER_CHARS:
        raise ParseError(f"answer is {len(answer)} characters long; at most {MAX_ANSWER_CHARS}.")
    tokens, position = [], 0
    while position < len(answer):
        match = TOKEN.match(answer, position)
        if match is None:
            raise ParseError(f"character {answer[position]!r} is not allowed in an answer.")
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append((kind, match.group()))
        position = match.end()
    if not tokens:
        raise ParseError("the answer is empty.")
    return tokens


# ---- the kinds of answer beyond numbers, and building them ----------------------------------

MAX_ITEMS = 50


@dataclass(frozen=True)
class Relation:
    """An equation or inequality chain: ``items[0] ops[0] items[1] ops[1] items[2] ...``."""

    ops: tuple[str, ...]
    items: tuple[sympy.Expr, ...]


@dataclass(frozen=True)
class Percent:
    """``value`` followed by a percent sign."""

    value: sympy.Expr


def real_symbols(value: object) -> object:
    """``value`` with every symbol a real one (comparisons read variables as real numbers)."""
    if isinstance(value, Relation):
        return Relation(value.ops, tuple(real_symbols(item) for item in value.items))
    if isinstance(value, Percent):
        return Percent(real_symbols(value.value))
    assert isinstance(value, sympy.Basic)
    mapping = {s: sympy.Symbol(s.name, real=True) for s in value.free_symbols}
    return value.xreplace(mapping) if mapping else value


def scalar(value: object) -> sympy.Expr:
    """``value`` when it is a number or expression; arithmetic on anything else is an error."""
    if isinstance(value, sympy.Expr):
        return value
    kind = type(value).__name__
    raise ParseError(f"a {kind} cannot take part in arithmetic; write one answer.")


def element(value: object) -> sympy.Basic:
    """A member of a tuple or set; an assignment ``x = 2`` in a list stands for its value."""
    if isinstance(value, Relation) and assigned(value) is not None:
        value = assigned(value)[1]  # type: ignore[index]
    if isinstance(value, (sympy.Expr, sympy.Tuple)):
        return value
    raise ParseError("a tuple or set holds numbers or expressions, not sets or relations.")


def assigned(value: object) -> tuple[sympy.Symbol, sympy.Basic] | None:
    """(x, v) for an equation ``x = v`` or ``v = x`` whose value ``v`` does not involve x."""
    if not (isinstance(value, Relation) and value.ops == ("=",)):
        return None
    left, right = value.items
    for symbol, side in ((left, right), (right, left)):
        if isinstance(symbol, sympy.Symbol) and symbol not in side.free_symbols:
            return symbol, side
    return None


def capped(items: list) -> list:
    if len(items) > MAX_ITEMS:
        raise TooLarge(f"more than {MAX_ITEMS} items in one answer.")
    return items


def as_set(value: object) -> sympy.Set:
    """A set operand; a pair ``(a, b)`` next to ``\\cup`` is the open interval."""
    if isinstance(value, sympy.Set):
        return value
    if isinstance(value, sympy.Tuple) and len(value) == 2:
        return interval(value[0], value[1], True, True)
    raise ParseError("\\cup, \\cap and \\setminus join sets or intervals.")


def interval(low: object, high: object, left_open: bool, right_open: bool) -> sympy.Set:
    try:
        return sympy.Interval(scalar(low), scalar(high), left_open, right_open)
    except (ValueError, TypeError) as err:
        raise ParseError(f"not an interval: {err}") from None


def relation(ops: tuple[str, ...], items: list) -> sympy.Basic | Relation:
    """A membership ``x \\in S`` is its set; equations and inequalities stay relations."""
    if "in" in ops:
        if ops != ("in",) or not isinstance(items[0], sympy.Symbol):
            raise ParseError("write a membership as x \\in S.")
        return as_set(items[1])
    if ops.count("=") > 1:
        raise ParseError("write one answer, not a chain of equalities.")
    if "=" in ops and len(ops) > 1:
        raise ParseError("an equality cannot be chained with an inequality.")
    whole = isinstance(items[1], (sympy.Tuple, sympy.Set))
    if ops == ("=",) and isinstance(items[0], sympy.Symbol) and whole:
        return Relation(ops, (items[0], items[1]))  # x = (1, 2), S = {1, 2}: kept whole
    return Relation(ops, tuple(scalar(item) for item in items))


FLIPPED = {">": "<", ">=": "<="}


def relation_set(relation: Relation) -> tuple[sympy.Symbol, sympy.Set] | None:
    """(variable, the set it ranges over) for ``x < 3``, ``1 <= x < 2``, ...; None otherwise."""
    ops, items = pointing_up(relation)
    variables = [i for i, item in enumerate(items) if isinstance(item, sympy.Symbol)]
    if len(variables) != 1:
        return None
    where, symbol = variables[0], items[variables[0]]
    if any(item.free_symbols for i, item in enumerate(items) if i != where):
        return None
    try:
        if len(ops) == 1:
            bound, op = items[1 - where], ops[0]
            return symbol, _one_sided(op, bound, variable_first=where == 0)
        if len(ops) == 2 and where == 1 and set(ops) <= {"<", "<="}:
            low, high = items[0], items[2]
            return symbol, sympy.Interval(low, high, ops[0] == "<", ops[1] == "<")
    except (TypeError, ValueError):
        return None
    return None


def _one_sided(op: str, bound: sympy.Expr, variable_first: bool) -> sympy.Set:
    if op == "=":
        return sympy.FiniteSet(bound)
    if op == "!=":
        return sympy.Complement(sympy.S.Reals, sympy.FiniteSet(bound))
    below = variable_first  # x < b: below b; b < x: above b
    strict = op == "<"
    if below:
        return sympy.Interval(-sympy.oo, bound, True, strict)
    return sympy.Interval(bound, sympy.oo, strict, True)


def pointing_up(relation: Relation) -> tuple[tuple[str, ...], tuple[sympy.Expr, ...]]:
    """The chain with ``>``/``>=`` turned round into ``<``/``<=`` (``3 > x`` is ``x < 3``)."""
    ops, items = relation.ops, relation.items
    if ops and all(op in FLIPPED for op in ops):
        return tuple(FLIPPED[op] for op in reversed(ops)), tuple(reversed(items))
    return ops, items
