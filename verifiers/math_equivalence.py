"""Are two answers equal? Exact values are equal only when shown to be; runs in the worker.

docs/verifiers.md states these rules with tables of what passes and what fails.

Numbers and expressions (symbols stand for real numbers):
1. two rationals (integers, fractions, decimals read as exact rationals) are equal or not;
2. other numbers without symbols are equal when their difference is shown to be zero (it
   vanishes when built, simplifies to zero, or its minimal polynomial is ``x``), and unequal
   when certified evaluation shows it non-zero, however small (``\\pi + 10^{-40}`` is not
   ``\\pi``); a difference that is neither fails;
3. expressions with symbols are evaluated at points (math_points.py) drawn from a generator
   seeded by a hash of both expressions: positive, negative, small, large and fractional values
   with large prime denominators, complex ones where both sides are analytic (no ``|.|``, roots
   or logarithms of a symbol). A point where they differ, or where one side alone is defined,
   fails them. Agreement is then shown exactly: the difference expands or simplifies to
   zero, or it is exactly zero at the points, which for a non-analytic side of one variable
   cover every piece between the real zeros of its ``|.|``, root and logarithm arguments;
4. the ``tolerance`` option (passed here only when the reference states a decimal) accepts a
   relative difference up to it.

Other kinds: tuples element by element in order; sets in any order (a set of one element is
that element); intervals by their ends, open or closed alike (a pair ``(a, b)`` is the open
interval; ``\\mathbb{R}`` is ``(-\\infty, \\infty)``); a percentage ``p%`` equals ``p/100``
and ``p``; an assignment ``x = v`` (or ``v = x``) equals ``v`` beside anything but an
equation; two equations are equal when they assign one variable equal values, or when the
differences of their sides are a constant non-zero multiple of each other, shown exactly; an
inequality in one variable with constant bounds, as the reference, is the set it describes
(the converse is refused: restating the problem's inequality is not solving it); other
inequalities are equal up to a positive factor. Different kinds are not equal.
"""

from __future__ import annotations

from typing import Any

import sympy
from sympy.core.evalf import PrecisionExhausted
from sympy.polys.polyerrors import NotAlgebraic, PolynomialError

from selfplay.verifiers.math_parse import Answer, Percent, Relation
from selfplay.verifiers.math_points import sample_points
from selfplay.verifiers.math_syntax import assigned, pointing_up, relation_set

CERTIFIED_DIGITS, MAX_DIGITS = 15, 2000
MIN_POINTS = 6
MAX_EXPANDED_POWER, MAX_PROOF_DIGITS = 64, 400
NOT_SHOWN = "not equal (the difference could not be shown to be zero)"


def same(answer: Answer, expected: Answer, tolerance: float) -> tuple[str, str]:
    """(status, detail): is ``answer`` the ``expected`` answer, by the rules above?"""
    if not isinstance(expected, Relation) and assigned(answer) is not None:
        answer = assigned(answer)[1]  # type: ignore[index]
    if not isinstance(answer, Relation) and assigned(expected) is not None:
        expected = assigned(expected)[1]  # type: ignore[index]
    if isinstance(answer, Percent) or isinstance(expected, Percent):
        equal = _same_percent(answer, expected, tolerance)
        return ("pass", "equal as a percentage") if equal else ("fail", "not equal")
    if isinstance(answer, sympy.Expr) and isinstance(expected, sympy.Expr):
        return equivalent(answer, expected, tolerance)
    if _equal(answer, expected, tolerance):
        return "pass", f"equal {_kind(expected)}"
    if _kind(answer) != _kind(expected) and not isinstance(expected, Relation):
        return "fail", f"a {_kind(answer)} where the reference is a {_kind(expected)}"
    return "fail", "not equal"


def _equal(a: Answer, b: Answer, tolerance: float) -> bool:
    """``a`` equals the reference ``b``: dispatch on the kinds of answer."""
    if isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr):
        return equivalent(a, b, tolerance)[0] == "pass"
    if isinstance(b, Relation):
        return _matches_relation(a, b, tolerance)
    if isinstance(a, (Relation, Percent)) or isinstance(b, Percent):
        return False
    lone_a, lone_b = _singleton(a), _singleton(b)
    if isinstance(b, sympy.Expr) and lone_a is not None:
        return _equal(lone_a, b, tolerance)
    if isinstance(a, sympy.Expr) and lone_b is not None:
        return _equal(a, lone_b, tolerance)
    if isinstance(a, sympy.Tuple) and isinstance(b, sympy.Tuple):
        return len(a) == len(b) and all(_equal(x, y, tolerance) for x, y in zip(a, b, strict=True))
    if isinstance(a, sympy.Set) or isinstance(b, sympy.Set):
        return _same_set(a, b, tolerance)
    return False


def _same_set(a: Any, b: Any, tolerance: float) -> bool:
    a, b = _pair_as_interval(a, b), _pair_as_interval(b, a)
    if not (isinstance(a, sympy.Set) and isinstance(b, sympy.Set)):
        return False
    if a == b:
        return True
    if isinstance(a, sympy.FiniteSet) and isinstance(b, sympy.FiniteSet):
        return _matched(list(a.args), list(b.args), lambda x, y: _equal(x, y, tolerance))
    if isinstance(a, sympy.Interval) and isinstance(b, sympy.Interval):
        ends = (a.left_open, a.right_open) == (b.left_open, b.right_open)
        return ends and _equal(a.start, b.start, tolerance) and _equal(a.end, b.end, tolerance)
    if isinstance(a, sympy.Union) and isinstance(b, sympy.Union):
        return _matched(list(a.args), list(b.args), lambda x, y: _same_set(x, y, tolerance))
    return False


def _matched(left: list, right: list, equal: Any) -> bool:
    """Every element of ``left`` pairs with its own equal element of ``right``."""
    if len(left) != len(right):
        return False
    unused = list(right)
    for item in left:
        partner = next((other for other in unused if equal(item, other)), None)
        if partner is None:
            return False
        unused.remove(partner)
    return True


def _pair_as_interval(value: Any, other: Any) -> Any:
    pair = isinstance(value, sympy.Tuple) and len(value) == 2
    if pair and isinstance(other, sympy.Set) and not isinstance(other, sympy.FiniteSet):
        return sympy.Interval(value[0], value[1], True, True)
    return value


def _singleton(value: Any) -> Any:
    if isinstance(value, sympy.FiniteSet) and len(value) == 1:
        return value.args[0]
    return None


def _same_percent(answer: Answer, expected: Answer, tolerance: float) -> bool:
    if isinstance(answer, Percent) and isinstance(expected, Percent):
        return _equal(answer.value, expected.value, tolerance)
    if isinstance(answer, Percent):
        values, target = (answer.value, answer.value / 100), expected
        return any(_equal(value, target, tolerance) for value in values)
    assert isinstance(expected, Percent)
    targets = (expected.value, expected.value / 100)
    return any(_equal(answer, target, tolerance) for target in targets)


# ---- relations ----------------------------------------------------------------------------


def _matches_relation(answer: Answer, expected: Relation, tolerance: float) -> bool:
    wanted = relation_set(expected)
    if isinstance(answer, Relation):
        given = relation_set(answer)
        if wanted is not None and given is not None:
            return wanted[0] == given[0] and _same_set(given[1], wanted[1], tolerance)
        return _same_relation(answer, expected, tolerance)
    return wanted is not None and _same_set(answer, wanted[1], tolerance)


def _same_relation(answer: Relation, expected: Relation, tolerance: float) -> bool:
    if answer == expected:
        return True
    ops_a, items_a = pointing_up(answer)
    ops_b, items_b = pointing_up(expected)
    if ops_a != ops_b:
        return False
    if len(ops_a) > 1:
        return all(_equal(x, y, tolerance) for x, y in zip(items_a, items_b, strict=False))
    one, other = assigned(answer), assigned(expected)
    if one is not None and other is not None and one[0] == other[0]:
        return _equal(one[1], other[1], tolerance)
    left, right = items_a[0] - items_a[1], items_b[0] - items_b[1]
    if right == 0:
        return False
    ratio = sympy.simplify(left / right)
    if ratio.free_symbols or not ratio.is_finite or ratio == 0:
        return False
    if ops_a[0] in ("<", "<=") and not ratio.is_positive:
        return False
    return equivalent(left, ratio * right, 0.0)[0] == "pass"


def _kind(value: Answer) -> str:
    if isinstance(value, Relation):
        return "relation"
    if isinstance(value, Percent):
        return "percentage"
    if isinstance(value, sympy.Tuple):
        return "tuple"
    if isinstance(value, sympy.Set):
        return "set"
    return "number or expression"


# ---- numbers and expressions --------------------------------------------------------------


def equivalent(answer: sympy.Expr, expected: sympy.Expr, tolerance: float) -> tuple[str, str]:
    if answer == expected:
        return "pass", "identical"
    infinite = answer.has(sympy.oo, -sympy.oo) or expected.has(sympy.oo, -sympy.oo)
    if tolerance > 0 and not infinite and _within(answer, expected, tolerance):
        return "pass", f"within relative tolerance {tolerance:g} of the stated decimal"
    if answer.is_Rational and expected.is_Rational:
        return "fail", "different numbers"
    if infinite:
        return "fail", "not equal (an infinite answer equals only the same infinity)"
    difference = answer - expected
    if difference == 0:
        return "pass", "equal"
    if not difference.free_symbols:
        zero = is_zero(difference, prove=True)
        if zero is None:
            return "fail", NOT_SHOWN
        return ("pass", "equal (shown exactly)") if zero else ("fail", "different numbers")
    return _compare_expressions(answer, expected, difference)


def is_zero(value: sympy.Expr, prove: bool) -> bool | None:
    """Whether a number without symbols is zero: True or False when shown, else None."""
    if value == 0:
        return True
    plain = not value.has(sympy.Function, sympy.pi, sympy.E)
    if plain and _small_powers(value):
        expanded = sympy.expand(value)
        if expanded == 0 or expanded.is_Rational:
            return expanded == 0
    small = _digits(value) <= MAX_PROOF_DIGITS  # beyond, sympy's own zero test can take minutes
    known = value.is_zero if small else None
    if known is not None:
        return bool(known)
    logs = [node.args[0] for node in value.atoms(sympy.log)]
    positive = logs and all(arg.is_Rational and arg > 0 for arg in logs)
    if positive and sympy.expand_log(value, force=True) == 0:  # valid for positive arguments
        return True
    try:
        digits = value.evalf(CERTIFIED_DIGITS, strict=True, maxn=MAX_DIGITS if prove else 60)
        if any(part != 0 for part in digits.as_real_imag()):
            return False
    except PrecisionExhausted:
        pass
    if not (prove and small):
        return None
    try:
        return sympy.minimal_polynomial(value, sympy.Dummy()).is_Symbol
    except (NotAlgebraic, NotImplementedError, PolynomialError):
        pass
    return True if sympy.simplify(value) == 0 else None


def _within(answer: sympy.Expr, expected: sympy.Expr, tolerance: float) -> bool:
    """Relatively within ``tolerance`` (at every sampled point, when there are symbols)."""
    points = sample_points(answer, expected)[0] if (answer - expected).free_symbols else [{}]
    for point in points:
        a, b = _value(answer, point), _value(expected, point)
        if a is None or b is None:
            return False
        if sympy.Abs(a - b) > tolerance * sympy.Max(sympy.Abs(a), sympy.Abs(b)):
            return False
    return True


def _compare_expressions(
    answer: sympy.Expr, expected: sympy.Expr, difference: sympy.Expr
) -> tuple[str, str]:
    if _small_powers(difference) and sympy.expand(difference) == 0:
        return "pass", "equal after expansion"
    points, covering, checked = sample_points(answer, expected)
    close = []
    for point in points:
        a, b = _value(answer, point), _value(expected, point)
        if a is None and b is None:
            continue
        where = ", ".join(f"{symbol} = {value}" for symbol, value in point.items())
        if a is None or b is None:
            return "fail", f"not equal (one side is undefined at {where} and the other is not)"
        if _apart(a, b):
            return "fail", f"not equal (they differ at {where})"
        close.append((point, where))
    # exactly, where it is cheap: no symbol in an exponent (a rational power of a rational
    # with a large prime denominator costs a factorisation)
    exponents = any(p.exp.free_symbols for p in difference.atoms(sympy.Pow))
    if covering and len(close) >= MIN_POINTS and not exponents:
        zeros = [is_zero(difference.subs(point), prove=False) for point, _ in close[:checked]]
        if False in zeros:
            return "fail", f"not equal (they differ at {close[zeros.index(False)][1]})"
        if all(zeros):
            return "pass", f"equal: exactly the same value at {len(zeros)} sampled points"
    rewritten = difference.rewrite(sympy.exp) if exponents else _factored(difference)
    if sympy.simplify(difference) == 0 or sympy.simplify(rewritten) == 0:
        return "pass", "equal after simplification"
    return "fail", NOT_SHOWN


def _value(expression: sympy.Expr, point: dict) -> sympy.Expr | None:
    """The value at ``point`` to 15 digits, None where it is undefined or infinite."""
    number = expression.evalf(CERTIFIED_DIGITS, subs=point)
    if number.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        return None
    parts = number.as_real_imag()
    return number if all(part.is_Number and part.is_finite for part in parts) else None


def _apart(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Whether two values known to 15 digits clearly differ (by over a millionth of their
    size); a value whose digits were lost in cancellation decides nothing."""
    parts = [part for value in (a, b) for part in value.as_real_imag() if part != 0]
    if any(getattr(part, "_prec", 53) < 20 for part in parts):
        return False
    return bool(sympy.Abs(a - b) > sympy.Float("1e-6") * sympy.Max(sympy.Abs(a), sympy.Abs(b)))


def _digits(value: sympy.Expr) -> int:
    """How many digits the rational numbers in ``value`` have (a proof's cost grows with it)."""
    return sum(len(str(abs(r.p))) + len(str(r.q)) for r in value.atoms(sympy.Rational))


def _small_powers(value: sympy.Expr) -> bool:
    """No power above ``MAX_EXPANDED_POWER`` (expanding one could take forever)."""
    return all(
        abs(node.exp) <= MAX_EXPANDED_POWER
        for node in sympy.preorder_traversal(value)
        if isinstance(node, sympy.Pow) and node.exp.is_Rational
    )


def _factored(difference: sympy.Expr) -> sympy.Expr:
    """``difference`` with the polynomial inside every root factored (``\\sqrt{x^2+2x+1}``)."""
    return difference.replace(
        lambda node: isinstance(node, sympy.Pow) and not node.exp.is_Integer,
        lambda node: sympy.Pow(sympy.factor(node.base), node.exp),
    )
