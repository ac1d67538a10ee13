"""Are two answers equal? Exact first, numeric last; runs inside the math verifier's worker.

1. two rational numbers (integers, fractions, decimals read as exact rationals) are equal or
   not, full stop: ``0.1+0.2`` equals ``0.3``, ``10^-30`` differs from ``0``, ``1/2004!``
   differs from ``1/2006!``;
2. otherwise the difference is simplified symbolically; zero means equal;
3. otherwise it is evaluated to 60 significant digits (at three fixed points when symbols are
   left) and counts as zero only below a relative 1e-30; a ``tolerance`` above 0 adds a looser
   relative tolerance for answers that are meant to be approximate.
"""

from __future__ import annotations

import random
from typing import Any

import sympy

from selfplay.verifiers.answers import ParseError
from selfplay.verifiers.math_parse import parse_answer

EXACT_DIGITS = 60
ZERO_RELATIVE = sympy.Float("1e-30", EXACT_DIGITS)
SAMPLE_POINTS = 3
# The reference is sound, so an answer that breaks parsing or comparison is a wrong answer.
CANDIDATE_FAULTS = (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError)


def compare(candidate: str, reference: str, tolerance: float) -> tuple[str, str]:
    """(status, detail) for one pair; runs inside the worker process."""
    try:
        expected = parse_answer(reference)
    except ParseError as err:
        return "error", f"the reference answer cannot be read: {err}"
    try:
        answer = parse_answer(candidate)
    except ParseError as err:
        return "fail", f"no readable answer: {err}"
    except CANDIDATE_FAULTS as err:
        return "fail", f"the answer cannot be read: {type(err).__name__}"
    try:
        return equivalent(answer, expected, tolerance)
    except CANDIDATE_FAULTS as err:
        return "fail", f"the answer cannot be compared: {type(err).__name__}"


def equivalent(answer: sympy.Expr, expected: sympy.Expr, tolerance: float) -> tuple[str, str]:
    if answer == expected:
        return "pass", "identical"
    if answer.is_Rational and expected.is_Rational:
        return "fail", "different numbers"
    difference = answer - expected
    if difference == 0 or sympy.simplify(difference) == 0:
        return "pass", "equal after simplification"
    symbols = sorted(difference.free_symbols, key=str)
    points = _sample_points(symbols) if symbols else [{}]
    gaps = [_relative_gap(answer, expected, point) for point in points]
    if any(gap is None for gap in gaps):
        return "fail", "not equal (could not be evaluated numerically)"
    worst = max(gaps)
    if worst <= ZERO_RELATIVE:
        return "pass", "numerically equal to 30 digits"
    if tolerance > 0 and worst <= tolerance:
        return "pass", f"within relative tolerance {tolerance:g}"
    return "fail", "not equal"


def _sample_points(symbols: list[sympy.Symbol]) -> list[dict[sympy.Symbol, sympy.Rational]]:
    rng = random.Random(20240917)
    return [
        {symbol: sympy.Rational(rng.randint(101, 997), rng.randint(101, 997)) for symbol in symbols}
        for _ in range(SAMPLE_POINTS)
    ]


def _relative_gap(answer: sympy.Expr, expected: sympy.Expr, point: dict) -> Any:
    """|a - b| / max(|a|, |b|) at ``point`` to 60 digits; 0 when both are 0; None if undefined."""
    a = sympy.Abs(answer.subs(point)).evalf(EXACT_DIGITS)
    b = sympy.Abs(expected.subs(point)).evalf(EXACT_DIGITS)
    gap = sympy.Abs((answer - expected).subs(point)).evalf(EXACT_DIGITS)
    if not all(value.is_Number and value.is_finite for value in (a, b, gap)):
        return None
    scale = max(a, b)
    return gap / scale if scale != 0 else gap
