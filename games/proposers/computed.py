"""The answer of a proposed problem that the game can work out itself.

The validity check (the proposer solves its own problem again) asks only that the proposer
agree with itself. A proposer that believes 1 + 1 = 1 writes ``[problem: What is 1 + 1?
answer: 1]``, answers 1 again, passes, and the solver is then scored against 1: paid for
the wrong answer and punished for the right one. Where a problem is plain arithmetic or one
linear equation, `computed_answer` finds its value, and the game holds the proposer's
answer to it (``game_options.compute_answers``).

Computable, and nothing else:

- an arithmetic expression (numbers, ``+ - * / ^ × ÷``, parentheses, and the words plus,
  minus, times, multiplied by, divided by, beside which a fraction ``7/8`` is one number)
  that holds every digit of the problem, with only
  question words around it: "What is 21 + 49?", "Compute (28 + 27) * 4 - 28 / 4.", "What is
  2/8 plus 7/9? Give a reduced fraction.";
- ``Solve for x: <an equation of degree 1 in x>``.

A problem that reads as one of these but has no single value (``What is 1 + answer:``, a
division by zero, an equation with no unknown) is ill-posed, and invalid whatever its answer.
A problem with any other word beside its numbers ("twice", "more than", a word problem, a
typo) is left to the validity check alone: reading prose is the solver's task, and a value
computed from a misread problem would mark a right answer wrong. Values are built by the math
verifier's parser from whitelisted tokens (verifiers/math_parse.py); no text is evaluated.

With ``compute_answers: always`` a problem the game cannot work out is invalid as well: for a
topic made only of such problems (sums, fractions, linear-equations) anything else is off the
topic, and a typo'd or garbled problem ("What iss 3 + 4 1?") answered consistently would
otherwise reach the solver with an answer nobody checked.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import sympy

from selfplay.verifiers.answers import ParseError
from selfplay.verifiers.math_parse import parse_span
from selfplay.verifiers.math_syntax import Relation

OPERATOR_WORDS = {"multiplied by": "*", "divided by": "/", "plus": "+", "minus": "-", "times": "*"}
QUESTION_WORDS = frozenset(
    """what what's is the value of compute calculate evaluate find work out simplify give your
    answer as a an reduced fraction in lowest terms please""".split()  # noqa: SIM905
)
ARITHMETIC = re.compile(r"[-+*/^×÷().\d\s]*\d[-+*/^×÷().\d\s]*")
FRACTION = re.compile(r"\d+(?:\.\d+)?\s*/\s*\d+(?:\.\d+)?")
WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
OUTSIDE = re.compile(r"[\s?.,:;=!]*")
SOLVE_FOR = re.compile(r"\s*solve\s+for\s+(?P<unknown>[a-z])\s*:\s*(?P<equation>.+?)[\s.]*$", re.I)
NUMBER = re.compile(r"(?<![\d.])\d+(?![\d.])")  # whole numbers, not parts of decimals
MAX_CHARS = 200  # longer problems are left to the validity check


class IllPosed(ValueError):
    """The problem reads as plain arithmetic or one equation but has no single value."""


def work_out(
    problem: str,
    answer: str,
    mode: str,
    verify: Callable[[str, str], Any],
    old: Mapping[str, str] | None = None,
) -> tuple[str | None, str | None]:
    """The problem's value and the verdict on the proposer's ``answer`` against it: the
    verifier's status, ``ill-posed``, or (``mode`` always) ``unreadable`` for a problem the
    game cannot work out, or the verdict ``old`` (`not_new`) gives a problem that is not new;
    (None, None) when the game leaves the problem to the validity check (``mode``
    when-readable, or off)."""
    if (verdict := (old or {}).get(_bare(problem))) is not None:
        return None, verdict
    if mode == "off":
        return None, None
    try:
        computed = computed_answer(problem)
    except IllPosed:
        return None, "ill-posed"
    if computed is None:
        return None, ("unreadable" if mode == "always" else None)
    return computed, verify(answer, computed).status


def not_new(example: str, held_out: tuple[str, ...]) -> dict[str, str]:
    """The problems a proposer may not set under ``new_problems``, in their bare form, with
    the verdict each gets: the example it was shown (``copied``: the rules ask for a new
    problem) and the game's held-out problems (``held-out``: the solver is measured on them,
    so it is never trained on them, and its held-out accuracy is on problems it never met)."""
    return {**_bare_forms(held_out), _bare(example): "copied"}


@cache
def _bare_forms(held_out: tuple[str, ...]) -> dict[str, str]:
    return {_bare(problem): "held-out" for problem in held_out}


def varied(
    problem: str, rng: random.Random, old: Mapping[str, str] | None = None
) -> tuple[str, str] | None:
    """``problem`` with each of its numbers replaced by another of as many digits, and the
    new problem's value; None when the game cannot work the problem out (a word problem) or
    no variation has a value (a demonstrator's new problem for ``new_problems``). A
    variation in ``old`` (`not_new`) is never chosen."""
    old = old or {}
    if computed_answer(problem) is None:
        return None
    for _ in range(20):
        new = NUMBER.sub(lambda m: _other_number(m.group(), rng), problem)
        try:
            value = computed_answer(new)
        except IllPosed:
            continue
        if value is not None and _bare(new) != _bare(problem) and _bare(new) not in old:
            return new, value
    return None


def _other_number(digits: str, rng: random.Random) -> str:
    if len(digits) == 1:
        return str(rng.randrange(10))
    return str(rng.randrange(10 ** (len(digits) - 1), 10 ** len(digits)))


def _bare(problem: str) -> str:
    """What is compared for a copy: the words and numbers, lower case."""
    return " ".join(re.findall(r"\w+|[-+*/^×÷=]", problem.lower()))


def computed_answer(problem: str) -> str | None:
    """The exact value of ``problem`` when it is computable (above), as the verifier reads
    it (``7``, ``-3/4``); None when the game cannot read it for certain (or its value is not
    a rational number). IllPosed when it reads as arithmetic or an equation to solve but has
    no single value: a dangling operator (``What is 1 + answer:``), a division by zero, an
    equation with no unknown or no single root."""
    if len(problem) > MAX_CHARS:
        return None
    solve = SOLVE_FOR.match(problem)
    value = _root(solve) if solve else _expression(problem)
    return str(value) if isinstance(value, sympy.Rational) else None


def _read(span: str) -> Any:
    try:
        return parse_span(span)
    except (ParseError, ArithmeticError, RecursionError, ValueError) as err:
        raise IllPosed(f"{span.strip()!r} cannot be worked out: {err}") from None


def _expression(problem: str) -> sympy.Basic | None:
    text = problem.lower()
    for words, operator in OPERATOR_WORDS.items():
        text = re.sub(rf"\b{words}\b", f" {operator} ", text)
    if text != problem.lower():  # "divided by 7/8" divides by the fraction: keep each whole
        text = FRACTION.sub(r"(\g<0>)", text)
    spans = [m for m in ARITHMETIC.finditer(text) if m.group().strip(" .")]
    if len(spans) != 1:
        return None  # no number, or numbers in two places: not one expression
    span = spans[0]
    outside = text[: span.start()] + " " + text[span.end() :]
    if any(w not in QUESTION_WORDS for w in WORD.findall(outside)):
        return None
    if OUTSIDE.fullmatch(WORD.sub(" ", outside)) is None:
        return None  # other symbols beside the expression (a letter-number mix, a unit)
    value = _read(span.group().strip(" ."))
    return value if isinstance(value, sympy.Expr) else None


def _root(solve: re.Match[str]) -> sympy.Basic | None:
    relation = _read(solve["equation"])
    if not (isinstance(relation, Relation) and relation.ops == ("=",)):
        raise IllPosed(f"{solve['equation']!r} is not one equation to solve")
    difference = sympy.expand(relation.items[0] - relation.items[1])
    unknowns = difference.free_symbols
    if [u.name for u in unknowns] != [solve["unknown"].lower()]:
        raise IllPosed(f"{solve['equation']!r} is not an equation in {solve['unknown']} alone")
    unknown = next(iter(unknowns))
    try:
        polynomial = sympy.Poly(difference, unknown)
    except (sympy.PolynomialError, ValueError, TypeError):
        return None  # not a polynomial (a root, a function): left to the validity check
    if polynomial.degree() != 1:
        return None
    slope, intercept = polynomial.all_coeffs()
    return -intercept / slope


# ---- what the game does with the verdict ---------------------------------------------------

INVALID_STATED = ("fail", "ill-posed", "unreadable", "copied", "held-out")
VOID = ("timeout", "error")


def after_proposal(computed: str | None, stated: str | None, opts: Any) -> str:
    """The phase a proposal leads to: ``done`` (the verifier failed at the answer check, or
    the problem is invalid and nobody will score the solver on it), ``solve`` (the game's value
    is the solver's reference, or the validity check is off) or ``check``."""
    if stated in VOID:
        return "done"
    if computed is not None and opts.solver_reference == "game":
        return "solve"
    if stated not in (None, "pass"):
        return "done"  # wrong, ill-posed or unreadable: no solver turn
    return "check" if opts.validity_check else "solve"


def reference(state: Any, opts: Any) -> str | None:
    """The answer the solver is scored against (``solver_reference``)."""
    if opts.solver_reference == "game" and state.computed is not None:
        return state.computed
    return state.answer


def valid(state: Any) -> bool:
    """Not (yet) found invalid: not ill-posed, unreadable (under ``always``), a copy of the
    example or a held-out problem (under ``new_problems``), not a wrong answer to a problem
    the game worked out, not a failed validity check."""
    return state.stated not in INVALID_STATED and state.self_verdict != "fail"


def match_payoffs(state: Any, solved: bool, invalid_payoff: float) -> dict[str, float]:
    """A finished, not void match's payoffs: the solver's ±1 when it was scored, 0 when it
    never played; the proposer's ∓1, or ``invalid_payoff`` for an invalid problem (which the
    solver still plays under ``solver_reference: game`` when the game worked it out)."""
    solver = 1.0 if solved else -1.0
    if valid(state):
        return {"solver": solver, "proposer": -solver}
    return {"solver": solver if state.verdict is not None else 0.0, "proposer": invalid_payoff}
