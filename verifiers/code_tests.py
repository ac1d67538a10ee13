"""Test cases the trusted parent holds, and the verdict it computes from a run's plain values.

The ``code`` verifier's reference is test code, but it is never run: the sandbox would run it
in the program's own process, where the program can rewrite ``assert``, comparisons and the
reporting itself. Instead the parent reads the tests with Python's parser (parsing only;
values with the literal parser, which runs nothing) into cases: which call to make, and what
must hold of the value it returns. Only the calls go into the sandbox; expected values stay
here, and the comparison runs here on decoded plain data (``code_values``), with Python's own
``==`` on builtin types.

Accepted statements, one per line or several, with literal arguments and expected values:

    assert f(2, [1, 3], k=4) == 9          also ``9 == f(...)`` and ``!=``
    assert f('x') is None                  ``is`` / ``is not`` with None, True or False
    assert f(3)            assert not f(4)
    assert math.isclose(f(0.1), 0.3, rel_tol=1e-9)      ``isclose`` too; ``import math`` is allowed

Anything else (a loop, a helper, a call inside a call) is a ``TestFormatError``: the reference
is broken, which a verifier reports as ``error``, never as the program's failure.
"""

from __future__ import annotations

import ast
import math
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from selfplay.api.verifier import Verdict, printable
from selfplay.verifiers import code_values
from selfplay.verifiers.code_sandbox import Call, RunResult

MAX_CASES = 1000
MAX_SHOWN_CHARS = 80
SHORT = reprlib.Repr()  # a bounded repr: never the whole of a huge value
SHORT.maxstring = SHORT.maxother = SHORT.maxlong = MAX_SHOWN_CHARS
Check = Literal["==", "!=", "is", "is not", "truthy", "falsy", "isclose"]
SHAPES = (
    "assert f(...) == value, assert f(...) is None, assert f(...), assert not f(...) or "
    "assert math.isclose(f(...), value)"
)


class TestFormatError(ValueError):
    """The reference tests are not in a form the parent can check itself."""


@dataclass(frozen=True)
class Case:
    call: Call
    check: Check
    expected: Any = None
    tolerances: dict[str, float] = field(default_factory=dict)


def parse_tests(source: str) -> list[Case]:
    """The cases of ``source``; TestFormatError naming the first statement that is not one."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise TestFormatError(f"the tests are not valid Python: {err}") from None
    cases = []
    for node in tree.body:
        if _imports_math(node):
            continue
        if not isinstance(node, ast.Assert):
            raise TestFormatError(f"line {node.lineno}: only assert statements are allowed.")
        cases.append(_case(node.test, node.lineno))
    if not cases or len(cases) > MAX_CASES:
        raise TestFormatError(f"the tests need 1 to {MAX_CASES} assert statements.")
    return cases


def judge(cases: Sequence[Case], result: RunResult) -> Verdict:
    """The verdict from the expected values here and the plain values the run returned."""
    if result.status == "error":
        return Verdict("error", f"sandbox failure: {result.detail}")
    if result.status == "timeout":
        return Verdict("timeout", result.detail)
    for number, (case, outcome) in enumerate(zip(cases, result.outcomes, strict=True), 1):
        name = f"test {number} of {len(cases)} ({case.call.function})"
        if outcome.kind != "ok":
            return Verdict("fail", printable(f"{name}: {outcome.detail or outcome.kind}"))
        if not holds(case, outcome.value):
            return Verdict("fail", f"{name} failed: it returned {shown(outcome.value)}")
    return Verdict("pass", f"all {len(cases)} tests passed")


def holds(case: Case, value: Any) -> bool:
    """Whether the decoded plain ``value`` satisfies ``case`` (Python semantics on builtins).
    A value that breaks the comparison (``math.isclose(10**400, 5.0)`` overflows) is not the
    expected one: the program's failure, never the checker's error."""
    try:
        return _holds(case, value)
    except (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError):
        return False


def _holds(case: Case, value: Any) -> bool:
    check, expected = case.check, case.expected
    if check == "==":
        return bool(value == expected)
    if check == "!=":
        return bool(value != expected)
    if check == "is":
        return value is expected
    if check == "is not":
        return value is not expected
    if check in ("truthy", "falsy"):
        return bool(value) == (check == "truthy")
    numbers = (int, float)
    if not (isinstance(value, numbers) and isinstance(expected, numbers)):
        return False
    return math.isclose(value, expected, **case.tolerances)


def shown(value: Any) -> str:
    text = printable(SHORT.repr(value))
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + "..."


def _imports_math(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return all(alias.name == "math" and alias.asname is None for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.module == "math" and all(alias.name == "isclose" for alias in node.names)
    return False


def _case(test: ast.expr, line: int) -> Case:
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return _comparison(test, line)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return Case(_call(test.operand, line), "falsy")
    if isinstance(test, ast.Call) and _is_isclose(test.func):
        return _isclose(test, line)
    return Case(_call(test, line), "truthy")


def _comparison(test: ast.Compare, line: int) -> Case:
    op, left, right = test.ops[0], test.left, test.comparators[0]
    names = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}
    check = names.get(type(op))
    if check is None:
        raise TestFormatError(f"line {line}: use one of {SHAPES}.")
    if not isinstance(left, ast.Call) and isinstance(right, ast.Call) and check in ("==", "!="):
        left, right = right, left
    expected = _literal(right, line)
    if check in ("is", "is not") and expected not in (None, True, False):
        raise TestFormatError(f"line {line}: 'is' compares only with None, True or False.")
    return Case(_call(left, line), check, expected)


def _isclose(test: ast.Call, line: int) -> Case:
    if len(test.args) != 2:
        raise TestFormatError(f"line {line}: isclose takes the call and the expected value.")
    tolerances = {}
    for keyword in test.keywords:
        if keyword.arg not in ("rel_tol", "abs_tol"):
            raise TestFormatError(f"line {line}: isclose accepts rel_tol and abs_tol only.")
        tolerances[keyword.arg] = float(_literal(keyword.value, line))
    expected = _literal(test.args[1], line)
    return Case(_call(test.args[0], line), "isclose", expected, tolerances)


def _is_isclose(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "isclose"
    return isinstance(func, ast.Attribute) and func.attr == "isclose"


def _call(node: ast.expr, line: int) -> Call:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise TestFormatError(f"line {line}: each test calls one function by name: {SHAPES}.")
    if any(keyword.arg is None for keyword in node.keywords):
        raise TestFormatError(f"line {line}: **kwargs are not allowed in a test call.")
    args = tuple(_literal(arg, line) for arg in node.args)
    kwargs = {str(keyword.arg): _literal(keyword.value, line) for keyword in node.keywords}
    return Call(node.func.id, args, kwargs)


def _literal(node: ast.expr, line: int) -> Any:
    try:
        value = ast.literal_eval(node)
        code_values.encode(value)  # plain data only (no complex numbers)
        return value
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        shown_source = ast.unparse(node)[:60]
        raise TestFormatError(
            f"line {line}: {shown_source!r} is not a literal value (numbers, strings, lists, "
            "tuples, dicts, sets, None, True, False)."
        ) from None
