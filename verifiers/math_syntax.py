"""The syntax of an answer: normalisation, a strict tokeniser, the vocabulary, capped values.

Normalisation undoes the ways one answer is written differently, and nothing else:

- Unicode look-alikes become their plain forms (``−`` ``×`` ``·`` ``÷`` ``π`` ``∞`` ``√``
  ``≤`` ``≥`` ``≠`` ``∪`` ``∩``);
- math delimiters (``$``, ``\\(``, ``\\[``), ``\\displaystyle``, ``\\left``/``\\right``, LaTeX
  spacing (``\\,`` ``\\;`` ``\\!`` ``~`` ``\\quad``) and degree marks are dropped;
- digit groups are joined: ``1,000``, ``1\\,000``, ``1{,}000`` and ``1\\ 000`` are 1000 (a
  separator counts only between digits and before exactly three of them);
- ``\\text{...}``, ``\\mathrm{...}``, ``\\textbf{...}``, ``\\mbox{...}`` and friends give their
  content (``\\text{3}`` is 3);
- a unit word after the number (``cm``, ``dollars``, ``degrees``, ``square units``, ...) and a
  final full stop are dropped; ``percent`` becomes ``%``.

The tokeniser then accepts only numbers, the operators of the grammar, LaTeX commands (which
the parser whitelists by name, from the vocabulary below) and ASCII letters; any other
character is a ParseError naming it, so no text reaches anything but our own parser. Values
are built only through the capped constructors at the end, which refuse numbers, powers and
factorials too large to compare cheaply.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sympy

from selfplay.verifiers.answers import MAX_ANSWER_CHARS, ParseError

UNICODE = str.maketrans(
    {
        "\u2212": "-",
        "\u2013": "-",
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
DIGIT_GROUP = re.compile(r"(?<=\d)(?:,|\{,\}|\\,|\\ |\\thinspace\s*)(?=\d{3}(?!\d))")
SPACING = re.compile(r"\\[,;:! ]|\\q?quad\b|~|\^\s*\{?\s*\\circ\s*\}?|\\circ\b")
UNITS = (
    "cm|mm|km|kg|mg|ml|meters?|metres?|centimeters?|kilometers?|inches|inch|feet|foot|ft|"
    "miles?|mph|hours?|hrs?|minutes?|mins?|seconds?|secs?|days?|weeks?|years?|dollars?|"
    "cents?|euros?|pounds?|degrees?|units?|points?|people|students|ways|cubic|square|sq"
)
TRAILING_UNITS = re.compile(rf"(?<=[\d}}).\s])\s*(?:\b(?:{UNITS})\b\.?\s*)+$", re.IGNORECASE)
PERCENT_WORD = re.compile(r"\s*\b(?:percent|per\s+cent|percentage|pct)\b\s*$", re.IGNORECASE)

TOKEN = re.compile(
    r"(?P<space>\s+)"
    r"|(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<cmd>\\[A-Za-z]+|\\[{}%])"
    r"|(?P<name>[A-Za-z]+)"
    r"|(?P<op>\*\*|<=|>=|!=|[-+*/^()!{}\[\],<>=|%])"
)
Token = tuple[str, str]
MAX_DEPTH = 30
MAX_NUMBER_DIGITS = 200
MAX_EXPONENT = 100_000
MAX_POWER_BITS = 400_000
MAX_FACTORIAL = 5000

# ---- the vocabulary: every name and command the parser knows ---------------------------------

FUNCTIONS: dict[str, Callable[[sympy.Expr], sympy.Expr]] = {
    "sqrt": sympy.sqrt,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "log": sympy.log,
    "ln": sympy.log,
    "exp": sympy.exp,
    "abs": sympy.Abs,
}
CONSTANTS = {
    "pi": sympy.pi,
    "e": sympy.E,
    "i": sympy.I,
    "infty": sympy.oo,
    "infinity": sympy.oo,
    "inf": sympy.oo,
    "oo": sympy.oo,
}
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
NOT_A_FACTOR = TIMES | DIVIDE | SET_OPS | set(RELATIONS) | {"\\}", "\\%"}


def normalise(answer: str) -> str:
    """One spelling for each way of writing the same answer (see the module docstring)."""
    answer = answer.translate(UNICODE)
    answer = DELIMITERS.sub(" ", answer)
    for _ in range(3):  # nested \text{\textbf{3}}
        answer = TEXT_COMMANDS.sub(lambda m: f" {m.group(1)} ", answer)
    answer = DIGIT_GROUP.sub("", answer)
    answer = SPACING.sub(" ", answer).strip()
    answer = answer.removesuffix(".").strip()
    answer = PERCENT_WORD.sub("%", answer)
    stripped = TRAILING_UNITS.sub("", answer).strip()
    return stripped if stripped else answer


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


def number_value(text: str) -> sympy.Rational:
    """A literal as an exact rational: ``2.50`` is 5/2, ``1e-3`` is 1/1000."""
    mantissa, _, exponent_text = text.lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    if len(whole) + len(fraction) > MAX_NUMBER_DIGITS:
        raise ParseError(f"a number has more than {MAX_NUMBER_DIGITS} digits.")
    exponent = int(exponent_text) if exponent_text else 0
    if abs(exponent) > MAX_EXPONENT:
        raise ParseError(f"an exponent is larger than {MAX_EXPONENT}.")
    value = sympy.Rational(int(whole or "0") * 10 ** len(fraction) + int(fraction or "0"))
    return value * sympy.Rational(10) ** (exponent - len(fraction))


# ---- capped constructors: building a value from literals is always cheap -------------------


def is_zero(value: sympy.Expr) -> bool:
    return value == 0


def divide(numerator: sympy.Expr, denominator: sympy.Expr) -> sympy.Expr:
    if is_zero(denominator):
        raise ParseError("division by zero.")
    return sympy.Mul(numerator, sympy.Pow(denominator, -1))


def power(base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
    if exponent.is_Number:
        if abs(exponent) > MAX_EXPONENT:
            raise ParseError(f"an exponent is larger than {MAX_EXPONENT}.")
        if base.is_Rational and bits(base) * abs(exponent) > MAX_POWER_BITS:
            raise ParseError("the power is too large to compare.")
    elif not exponent.free_symbols and exponent.has(sympy.Pow) and base.is_Number:
        # a constant tower like 2^(3^(1/2)*10^5) stays symbolic; keep it bounded all the same
        bound = sympy.Abs(exponent).evalf(15)
        if not bound.is_Number or bound > MAX_EXPONENT:
            raise ParseError("the exponent is too large to compare.")
    if base == 0 and exponent.is_Number and exponent < 0:
        raise ParseError("division by zero.")
    return sympy.Pow(base, exponent)


def bits(value: sympy.Rational) -> int:
    return max(int(value.p).bit_length(), int(value.q).bit_length(), 1)


def factorial(value: sympy.Expr) -> sympy.Expr:
    if value.free_symbols:
        return sympy.factorial(value)
    if not (value.is_Integer and 0 <= value <= MAX_FACTORIAL):
        raise ParseError(f"factorial needs a whole number from 0 to {MAX_FACTORIAL}.")
    return sympy.factorial(value)


def binomial(top: sympy.Expr, bottom: sympy.Expr) -> sympy.Expr:
    for value in (top, bottom):
        if not value.free_symbols and not (value.is_Integer and abs(value) <= MAX_FACTORIAL):
            raise ParseError(f"\\binom needs whole numbers up to {MAX_FACTORIAL} (or symbols).")
    return sympy.binomial(top, bottom)
