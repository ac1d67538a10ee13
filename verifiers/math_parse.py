"""Turn a model's final answer into a sympy expression without ever evaluating text.

The text is tokenised against a whitelist and parsed by our own recursive-descent parser; the
expression is built from sympy constructors (``Integer``, ``Rational``, ``Add``, ``Mul``,
``Pow``, ``Symbol`` and a few functions). ``eval``, ``exec``, ``sympify`` and ``parse_expr``
are never called, so no text can reach Python's interpreter.

The answer part of the text is found by ``answers.extract_answer``. In it, ``x = 5`` keeps
the part after the last ``=``; ``$``, ``\\left``, ``\\right``, LaTeX spacing, degree signs,
thousands separators (``1,000``) and a final full stop are dropped.

The grammar: numbers (``3``, ``2.5``, ``.5``, ``1e-3``; decimals are exact rationals), ``+ - *
/ ^ **``, postfix ``!``, parentheses and braces, implicit multiplication (``2x``, ``3\\pi``,
``2(x+1)``), the functions sqrt, sin, cos, tan, log (natural), ln, exp, abs, the constants pi
and e, single-letter symbols, and the LaTeX forms ``\\frac{a}{b}``, ``\\sqrt{x}``,
``\\sqrt[n]{x}``, ``\\cdot``, ``\\times``, ``\\div``, ``\\pi`` and ``\\sin`` and friends.
Nothing else: no other names, no underscores, no strings, no attribute access. Caps bound the
answer's length, the nesting depth, exponents, the size of a power and factorial arguments, so
building an expression is always cheap; comparing it runs in a killable worker anyway.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sympy

from selfplay.verifiers.answers import MAX_ANSWER_CHARS, ParseError, extract_answer

MAX_DEPTH = 30
MAX_NUMBER_DIGITS = 200
MAX_EXPONENT = 100_000
MAX_POWER_BITS = 400_000
MAX_FACTORIAL = 5000

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
CONSTANTS = {"pi": sympy.pi, "e": sympy.E}
LATEX_FUNCTIONS = {"\\" + name for name in ("sqrt", "sin", "cos", "tan", "log", "ln", "exp")}
LATEX_TIMES = {"\\cdot", "\\times"}
LATEX_FRACTIONS = {"\\frac", "\\dfrac", "\\tfrac"}

TOKEN = re.compile(
    r"(?P<space>\s+)"
    r"|(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<cmd>\\[A-Za-z]+)"
    r"|(?P<name>[A-Za-z]+)"
    r"|(?P<op>\*\*|[-+*/^()!{}\[\]])"
)
NOISE = re.compile(r"\\left|\\right|\\[,;:! ]|\$|\^\s*\{?\s*\\circ\s*\}?|°")
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def normalise(answer: str) -> str:
    answer = NOISE.sub(" ", answer)
    answer = THOUSANDS.sub("", answer)
    answer = answer.rsplit("=", 1)[-1].strip()
    return answer.removesuffix(".").strip()


def tokenize(answer: str) -> list[tuple[str, str]]:
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


def parse_answer(text: str) -> sympy.Expr:
    """The sympy expression of the answer in ``text``; ParseError when it is not acceptable."""
    expression = Parser(tokenize(normalise(extract_answer(text)))).parse()
    if expression.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise ParseError("the answer is not finite (division by zero?).")
    return expression


# ---- parsing ------------------------------------------------------------------------------


class Parser:
    """Recursive descent over whitelisted tokens; builds the sympy expression as it goes."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.index = 0
        self.depth = 0

    def parse(self) -> sympy.Expr:
        expression = self.expression()
        if self.index != len(self.tokens):
            raise ParseError(f"unexpected {self.tokens[self.index][1]!r} after the answer.")
        return expression

    # grammar: expression := term (('+'|'-') term)*
    def expression(self) -> sympy.Expr:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError(f"the answer is nested deeper than {MAX_DEPTH} levels.")
        result = self.term()
        while self.peek() in ("+", "-"):
            sign = self.take()[1]
            right = self.term()
            result = sympy.Add(result, right if sign == "+" else sympy.Mul(-1, right))
        self.depth -= 1
        return result

    # term := unary (('*'|'/'|'\cdot'|'\times'|'\div'|implicit) unary)*
    def term(self) -> sympy.Expr:
        result = self.unary()
        while True:
            token = self.peek()
            if token in ("*", "/", "\\div") or token in LATEX_TIMES:
                self.take()
                right = self.unary()
                result = _divide(result, right) if token in ("/", "\\div") else result * right
            elif self.starts_implicit_factor():
                result = sympy.Mul(result, self.unary())
            else:
                return result

    def starts_implicit_factor(self) -> bool:
        if self.index >= len(self.tokens):
            return False
        kind, text = self.tokens[self.index]
        if kind in ("name", "cmd"):
            return text not in LATEX_TIMES and text != "\\div"
        return text in ("(", "{")

    # unary := ('+'|'-') unary | power
    def unary(self) -> sympy.Expr:
        if self.peek() in ("+", "-"):
            sign = self.take()[1]
            self.enter()
            operand = self.unary()
            self.depth -= 1
            return operand if sign == "+" else sympy.Mul(-1, operand)
        return self.power()

    # power := postfix (('^'|'**') unary)?      (right-associative through unary)
    def power(self) -> sympy.Expr:
        base = self.postfix()
        if self.peek() in ("^", "**"):
            self.take()
            self.enter()
            exponent = self.unary()
            self.depth -= 1
            return _power(base, exponent)
        return base

    # postfix := atom '!'*
    def postfix(self) -> sympy.Expr:
        result = self.atom()
        while self.peek() == "!":
            self.take()
            result = _factorial(result)
        return result

    def atom(self) -> sympy.Expr:
        kind, text = self.take()
        if kind == "num":
            return _number(text)
        if text in ("(", "{"):
            inner = self.expression()
            self.expect(")" if text == "(" else "}")
            return inner
        if kind == "name":
            return self.name(text)
        if kind == "cmd":
            return self.command(text)
        raise ParseError(f"unexpected {text!r}.")

    def name(self, text: str) -> sympy.Expr:
        if text in FUNCTIONS:
            return FUNCTIONS[text](self.argument())
        if text in CONSTANTS:
            return CONSTANTS[text]
        if len(text) == 1:
            return sympy.Symbol(text)
        raise ParseError(f"unknown name {text!r}; only single-letter symbols are allowed.")

    def command(self, text: str) -> sympy.Expr:
        if text in LATEX_FRACTIONS:
            numerator = self.group()
            return _divide(numerator, self.group())
        if text == "\\sqrt" and self.peek() == "[":
            self.take()
            index = self.expression()
            self.expect("]")
            return _power(self.argument(), _divide(sympy.Integer(1), index))
        if text in LATEX_FUNCTIONS:
            return FUNCTIONS[text[1:]](self.argument())
        if text == "\\pi":
            return sympy.pi
        raise ParseError(f"LaTeX command {text!r} is not allowed in an answer.")

    def group(self) -> sympy.Expr:
        self.expect("{")
        inner = self.expression()
        self.expect("}")
        return inner

    def argument(self) -> sympy.Expr:
        """A function's argument: ``(x)``, ``{x}`` or a single factor (``\\sin x``)."""
        self.enter()
        result = self.postfix()
        self.depth -= 1
        return result

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError(f"the answer is nested deeper than {MAX_DEPTH} levels.")

    def peek(self) -> str | None:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.index >= len(self.tokens):
            raise ParseError("the answer ends too early.")
        token = self.tokens[self.index]
        self.index += 1
        return token

    def expect(self, text: str) -> None:
        found = self.take()[1]
        if found != text:
            raise ParseError(f"expected {text!r} but found {found!r}.")


# ---- capped constructors ------------------------------------------------------------------


def _number(text: str) -> sympy.Rational:
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


def _divide(numerator: sympy.Expr, denominator: sympy.Expr) -> sympy.Expr:
    if denominator == 0:
        raise ParseError("division by zero.")
    return sympy.Mul(numerator, sympy.Pow(denominator, -1))


def _power(base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
    if exponent.is_Number:
        if abs(exponent) > MAX_EXPONENT:
            raise ParseError(f"an exponent is larger than {MAX_EXPONENT}.")
        if base.is_Rational and _bits(base) * abs(exponent) > MAX_POWER_BITS:
            raise ParseError("the power is too large to compare.")
    elif not exponent.free_symbols and exponent.has(sympy.Pow) and base.is_Number:
        # a constant tower like 2^(3^(1/2)*10^5) stays symbolic; keep it bounded all the same
        bound = sympy.Abs(exponent).evalf(15)
        if not bound.is_Number or bound > MAX_EXPONENT:
            raise ParseError("the exponent is too large to compare.")
    if base == 0 and exponent.is_Number and exponent < 0:
        raise ParseError("division by zero.")
    return sympy.Pow(base, exponent)


def _bits(value: sympy.Rational) -> int:
    return max(int(value.p).bit_length(), int(value.q).bit_length(), 1)


def _factorial(value: sympy.Expr) -> sympy.Expr:
    if value.free_symbols:
        return sympy.factorial(value)
    if not (value.is_Integer and 0 <= value <= MAX_FACTORIAL):
        raise ParseError(f"factorial needs a whole number from 0 to {MAX_FACTORIAL}.")
    return sympy.factorial(value)
