"""Where two expressions with symbols are compared (math_equivalence.py, rule 3): the points.

Points are drawn from a generator seeded by a hash of both expressions, so a verdict never
varies between runs: positive, negative, small, large and fractional values with large prime
denominators, and complex ones where both sides are analytic (no ``|.|``, roots or logarithms
of a symbol). For a non-analytic side of one variable the points also cover every piece
between the real zeros of its ``|.|``, root and logarithm arguments, so that agreement at them
can show equality.
"""

from __future__ import annotations

import hashlib
import itertools
import random

import sympy
from sympy.polys.polyerrors import PolynomialError

REAL_POINTS, COMPLEX_POINTS, EXACT_POINTS = 12, 4, 8


def sample_points(answer: sympy.Expr, expected: sympy.Expr) -> tuple[list[dict], bool, int]:
    """The sample points; whether they can show equality (analytic sides, or the pieces of
    one variable's non-analytic sides all covered); how many, first, to check exactly."""
    symbols = sorted((answer - expected).free_symbols, key=str)
    seed = hashlib.sha256(f"{sympy.srepr(answer)}\n{sympy.srepr(expected)}".encode()).digest()
    rng = random.Random(seed)
    points = [{s: _real(rng, k) for s in symbols} for k in range(REAL_POINTS)]
    critical = _critical(answer) + _critical(expected)
    if not critical:
        complex_points = [
            {s: _real(rng, k) + sympy.I * _real(rng, k + 1) for s in symbols}
            for k in range(COMPLEX_POINTS)
        ]
        return points + complex_points, True, EXACT_POINTS
    cuts = _real_zeros(critical, symbols[0]) if len(symbols) == 1 else None
    if not cuts:
        return points, cuts is not None, EXACT_POINTS
    ends = [cuts[0] - 1 - _real(rng, 1), *cuts, cuts[-1] + 1 + _real(rng, 1)]
    pieces = [
        {symbols[0]: low + (high - low) * _real(rng, 0)}
        for low, high in itertools.pairwise(ends)
        for _ in range(2)
    ]
    return pieces + points, True, max(EXACT_POINTS, len(pieces))


def _critical(expression: sympy.Expr) -> list[sympy.Expr]:
    """Arguments where a side stops being analytic: in ``|.|``, roots and logarithms."""
    found = []
    for node in sympy.preorder_traversal(expression):
        if isinstance(node, (sympy.Abs, sympy.log)):
            found.append(node.args[0])
        elif isinstance(node, sympy.Pow) and not node.exp.is_Integer:
            found.append(node.base)
    return [item for item in found if item.free_symbols]


def _real(rng: random.Random, k: int) -> sympy.Rational:
    """A value with a large prime denominator; ``k`` picks the sign and size (0: in (0, 1))."""
    denominator = sympy.nextprime(rng.randint(10_000, 1_000_000))
    fraction = sympy.Rational(rng.randint(1, denominator - 1), denominator)
    if k == 0:
        return fraction
    whole = rng.choice((0, rng.randint(1, 9), rng.randint(10, 999), rng.randint(1000, 99_999)))
    return (whole + fraction) * (1 if k % 2 else -1)


def _real_zeros(arguments: list[sympy.Expr], symbol: sympy.Symbol) -> list | None:
    """The sorted real zeros (and poles) of the arguments, as exact rationals; None when an
    argument is not a ratio of polynomials in ``symbol``."""
    zeros: set = set()
    for argument in arguments:
        while isinstance(argument, (sympy.Abs, sympy.Pow)) and not argument.is_polynomial():
            argument = argument.args[0]  # |u| and u^(1/2) vanish where u does
        for part in sympy.fraction(sympy.together(argument)):
            if not part.free_symbols:
                continue
            try:
                poly = sympy.Poly(part, symbol)
                if poly.degree() > 40 or not all(c.is_Rational for c in poly.coeffs()):
                    return None
                roots = poly.sqf_part().nroots(n=30, maxsteps=200)
            except (PolynomialError, ValueError, ArithmeticError):
                return None
            zeros.update(sympy.Rational(root) for root in roots if root.is_real)
    return sorted(zeros)
