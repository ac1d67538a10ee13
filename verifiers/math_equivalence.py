"""Are two answers equal? Exact first, numeric last; runs inside the math verifier's worker.

Numbers and expressions:
1. two rational numbers (integers, fractions, decimals read as exact rationals) are equal or
   not, full stop: ``0.1+0.2`` equals ``0.3``, ``10^-30`` differs from ``0``, ``1/2004!``
   differs from ``1/2006!``;
2. otherwise the difference is simplified symbolically; zero means equal;
3. otherwise it is evaluated to 60 significant digits (at three fixed points when symbols are
   left) and counts as zero only below a relative 1e-30; a ``tolerance`` above 0 adds a looser
   relative tolerance for answers that are meant to be approximate.

Other kinds of answer (see ``math_parse``):
- tuples are equal element by element, in order; sets (and lists of answers) element by
  element in any order; a set of one element equals that element;
- intervals are equal when both ends are equal and both ends are open or closed alike; a
  pair ``(a, b)`` equals the open interval; unions are equal piece by piece;
- a percentage ``p%`` equals ``p/100`` and also ``p`` itself (a reference that counts in
  percent, as in "what percent ..."), whichever side carries the sign;
- an inequality in one variable with constant bounds is the set it describes, so ``x \\le 3``
  as the reference accepts ``(-\\infty, 3]``. The converse is refused on purpose: where an
  interval is asked for, restating the problem's inequality is not solving it;
- other equations and inequalities are equal when they say the same thing: the differences of
  their sides agree up to a constant factor (a positive one for inequalities), after ``>``
  is turned round into ``<``.
Answers of different kinds (a set and a number, an equation and a number) are not equal.
"""

from __future__ import annotations

import random
from typing import Any

import sympy

from selfplay.verifiers.answers import ParseError
from selfplay.verifiers.math_parse import Answer, Percent, Relation, parse_span

EXACT_DIGITS = 60
ZERO_RELATIVE = sympy.Float("1e-30", EXACT_DIGITS)
SAMPLE_POINTS = 3
# The reference is sound, so an answer that breaks parsing or comparison is a wrong answer.
CANDIDATE_FAULTS = (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError)
FLIPPED = {">": "<", ">=": "<="}


def compare(candidate: str, reference: str, tolerance: float) -> tuple[str, str]:
    """(status, detail) for one pair of answer spans; runs inside the worker process."""
    try:
        expected = parse_span(reference)
    except (ParseError, *CANDIDATE_FAULTS) as err:
        return "error", f"the reference answer cannot be read: {err}"
    try:
        answer = parse_span(candidate)
    except ParseError as err:
        return "fail", f"no readable answer: {err}"
    except CANDIDATE_FAULTS as err:
        return "fail", f"the answer cannot be read: {type(err).__name__}"
    try:
        return same(answer, expected, tolerance)
    except CANDIDATE_FAULTS as err:
        return "fail", f"the answer cannot be compared: {type(err).__name__}"


def same(answer: Answer, expected: Answer, tolerance: float) -> tuple[str, str]:
    """(status, detail): is ``answer`` the ``expected`` answer, by the rules above?"""
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


def relation_set(relation: Relation) -> tuple[sympy.Symbol, sympy.Set] | None:
    """(variable, the set it ranges over) for ``x < 3``, ``1 <= x < 2``, ...; None otherwise."""
    ops, items = _pointing_up(relation)
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


def _pointing_up(relation: Relation) -> tuple[tuple[str, ...], tuple[sympy.Expr, ...]]:
    """The chain with ``>``/``>=`` turned round into ``<``/``<=`` (``3 > x`` is ``x < 3``)."""
    ops, items = relation.ops, relation.items
    if ops and all(op in FLIPPED for op in ops):
        return tuple(FLIPPED[op] for op in reversed(ops)), tuple(reversed(items))
    return ops, items


def _same_relation(answer: Relation, expected: Relation, tolerance: float) -> bool:
    if answer == expected:
        return True
    ops_a, items_a = _pointing_up(answer)
    ops_b, items_b = _pointing_up(expected)
    if ops_a != ops_b:
        return False
    if len(ops_a) > 1:
        return all(_equal(x, y, tolerance) for x, y in zip(items_a, items_b, strict=False))
    ratio = sympy.simplify((items_a[0] - items_a[1]) / (items_b[0] - items_b[1]))
    if ratio.free_symbols or not ratio.is_finite or ratio == 0:
        return False
    return bool(ratio.is_positive) if ops_a[0] in ("<", "<=") else True


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
    if answer.is_Rational and expected.is_Rational:
        return "fail", "different numbers"
    if answer.has(sympy.oo, -sympy.oo) or expected.has(sympy.oo, -sympy.oo):
        return "fail", "not equal (an infinite answer equals only the same infinity)"
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
