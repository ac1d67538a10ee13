"""Build the values of an answer with caps, so that building one is always cheap.

The parser (``math_parse``) makes every number, power, factorial and binomial through the
constructors here, never through sympy's own on raw text. Each refuses, with a ParseError
that says so, a value too large to compare cheaply:

- a literal of more than ``MAX_NUMBER_DIGITS`` digits, or with an exponent beyond
  ``MAX_EXPONENT`` (``1e999999999``);
- an exponent beyond ``MAX_EXPONENT`` in size, whatever its form: a number (``2^{10^6}``), or
  a constant expression measured by its value (``e^{e^{100}}``, ``\\exp(\\exp(100))``,
  ``2^{\\pi \\cdot 10^5}``). Each level of a tower is built and bounded before the next, so
  measuring one never evaluates anything larger than the caps allow, and the cost of a
  tower such as ``exp(exp(exp(exp(100))))`` is bounded the same way under every hash seed;
- a power of a rational above ``MAX_POWER_BITS`` bits, a root of one above ``MAX_ROOT_BITS``;
- a factorial or binomial of more than ``MAX_FACTORIAL``.

Such a value is refused with ``TooLarge``: it is too large to build, not wrong, so a reply
that writes a reference over the caps identically still states it (``math_verifier``).
"""

from __future__ import annotations

import sympy

from selfplay.verifiers.answers import ParseError


class TooLarge(ParseError):
    """A value over the caps (the module docstring says why it is not a wrong one)."""


MAX_NUMBER_DIGITS = 200
MAX_EXPONENT = 100_000
MAX_POWER_BITS = 400_000
MAX_ROOT_BITS = 2000
MAX_FACTORIAL = 5000


def number_value(text: str) -> sympy.Rational:
    """A literal as an exact rational: ``2.50`` is 5/2, ``1e-3`` is 1/1000."""
    mantissa, _, exponent_text = text.lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    if len(whole) + len(fraction) > MAX_NUMBER_DIGITS:
        raise TooLarge(f"a number has more than {MAX_NUMBER_DIGITS} digits.")
    exponent = int(exponent_text) if exponent_text else 0
    if abs(exponent) > MAX_EXPONENT:
        raise TooLarge(f"an exponent is larger than {MAX_EXPONENT}.")
    value = sympy.Rational(int(whole or "0") * 10 ** len(fraction) + int(fraction or "0"))
    return value * sympy.Rational(10) ** (exponent - len(fraction))


def is_zero(value: sympy.Expr) -> bool:
    return value == 0


def divide(numerator: sympy.Expr, denominator: sympy.Expr) -> sympy.Expr:
    if is_zero(denominator):
        raise ParseError("division by zero.")
    return sympy.Mul(numerator, sympy.Pow(denominator, -1))


def power(base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
    if exponent.is_Number:
        if abs(exponent) > MAX_EXPONENT:
            raise TooLarge(f"an exponent is larger than {MAX_EXPONENT}.")
        if base.is_Rational and bits(base) * abs(exponent) > MAX_POWER_BITS:
            raise TooLarge("the power is too large to compare.")
        if base.is_Rational and not exponent.is_Integer and bits(base) > MAX_ROOT_BITS:
            raise TooLarge(
                f"a root of a number above {MAX_ROOT_BITS} bits is too costly; simplify it."
            )
    elif not exponent.free_symbols:
        # a constant exponent that stays symbolic (e^(e^100), 2^(pi*10^5)): bounded by value
        bound = sympy.Abs(exponent).evalf(15)
        if not bound.is_Number or bound > MAX_EXPONENT:
            raise TooLarge(f"an exponent is larger than {MAX_EXPONENT}.")
    if base == 0 and exponent.is_Number and exponent < 0:
        raise ParseError("division by zero.")
    return sympy.Pow(base, exponent)


def exponential(exponent: sympy.Expr) -> sympy.Expr:
    """``exp(x)``: the power ``e^x``, with its caps."""
    return power(sympy.E, exponent)


def bits(value: sympy.Rational) -> int:
    return max(int(value.p).bit_length(), int(value.q).bit_length(), 1)


def factorial(value: sympy.Expr, double: bool = False) -> sympy.Expr:
    """``n!``, or the double factorial ``n!!`` (n(n-2)(n-4)..., not (n!)!)."""
    make = sympy.factorial2 if double else sympy.factorial
    if value.free_symbols:
        return make(value)
    if not (value.is_Integer and 0 <= value <= MAX_FACTORIAL):
        mark = "!!" if double else "!"
        error = TooLarge if value.is_Integer and value > MAX_FACTORIAL else ParseError
        raise error(f"n{mark} needs a whole number n from 0 to {MAX_FACTORIAL}.")
    return make(value)


def binomial(top: sympy.Expr, bottom: sympy.Expr) -> sympy.Expr:
    for value in (top, bottom):
        if not value.free_symbols and not (value.is_Integer and abs(value) <= MAX_FACTORIAL):
            error = TooLarge if value.is_Integer else ParseError
            raise error(f"\\binom needs whole numbers up to {MAX_FACTORIAL} (or symbols).")
    return sympy.binomial(top, bottom)
