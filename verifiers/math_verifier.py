"""The ``math`` verifier: is a model's final answer equal to the reference answer?

The final answer and the reply's other answer statements are found by the rule in
``answers`` (for the candidate, the game's answer format when the caller passes
``answer_pattern`` or a ``game`` with one; then boxes, then "answer:" lines, then a reply that
is one short line; never "the last number anywhere"). They are read by ``math_parse`` (a
whitelist grammar, never ``eval``/``sympify``) and compared by ``math_equivalence``.

One final answer: every other statement of the reply must have the same value as the final
answer, or the reply hedges and fails with a detail that says so (a box the grammar cannot
read counts as a different answer; an answer line it cannot read is prose). Prose after a
statement that offers another value ("or possibly 3") hedges too. Exact values are
equal only when shown to be; the ``tolerance`` option applies only where the reference states
a decimal (``3.14``), never to exact values (``\\pi``, ``1/3``).

Every comparison runs in a killable worker process; one that takes longer than ``timeout`` is
a ``timeout`` verdict and the worker is replaced. A reference that cannot be parsed is an
``error`` (the task is broken, not the answer); a candidate without an answer, or whose
answer cannot be parsed or compared, is a ``fail``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from selfplay.api.verifier import Verdict, Verifier, VerifierOptions, printable
from selfplay.plugins.hookspecs import hookimpl
from selfplay.verifiers.answers import (
    HEDGE_WORDS,
    ParseError,
    extract_answer,
    find_statements,
    hedge_detail,
    prose_hedge_detail,
)
from selfplay.verifiers.math_equivalence import same
from selfplay.verifiers.math_parse import parse_span
from selfplay.verifiers.math_syntax import normalise, real_symbols, tokenize
from selfplay.verifiers.worker import Worker

# The reference is sound, so an answer that breaks parsing or comparison is a wrong answer.
CANDIDATE_FAULTS = (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError)


class MathOptions(VerifierOptions):
    timeout: float = Field(default=5.0, gt=0, le=300, description="Seconds per comparison.")
    tolerance: float = Field(
        default=0.0,
        ge=0,
        lt=1,
        description="Relative tolerance for a reference that states a decimal (0: none).",
    )
    memory_mb: int = Field(
        default=2048, ge=256, description="Address-space limit of the worker process (MiB)."
    )


class MathVerifier(Verifier):
    """Answer equivalence with sympy: exact first, never eval; runs in a killable worker."""

    name = "math"
    Options = MathOptions
    reads_replies = True  # give it a whole reply and the game's answer format

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.worker = Worker(
            "selfplay.verifiers.math_verifier:compare", memory_mb=self.options.memory_mb
        )

    def start(self) -> None:
        """Start the worker now instead of on the first check (it takes a second or so)."""
        self.worker.start()

    def check(self, candidate: str, reference: str, **ctx: Any) -> Verdict:
        pattern = answer_format(ctx)
        try:
            expected = extract_answer(reference)
        except ParseError as err:
            return Verdict("error", f"the reference has no answer: {err}")
        try:
            found = find_statements(candidate, pattern)
        except ParseError as err:
            return Verdict("fail", str(err))
        statements = [found.final, found.boxes, found.lines, found.hedge]
        args = [*statements, expected, self.options.tolerance]
        result = self.worker.call(args, self.options.timeout)
        if result.outcome == "timeout":
            return Verdict("timeout", f"comparison took longer than {self.options.timeout:g} s")
        if result.outcome == "error":
            return Verdict("error", printable(f"math worker: {result.detail}"))
        status, detail = result.value
        return Verdict(status, printable(detail))

    def close(self) -> None:
        self.worker.close()


def answer_format(ctx: dict[str, Any]) -> Any:
    """The caller's answer format: ``answer_pattern``, else the ``game``'s, else None."""
    if ctx.get("answer_pattern") is not None:
        return ctx["answer_pattern"]
    return getattr(ctx.get("game"), "answer_pattern", None)


def compare(
    final: str, boxes: list[str], lines: list[str], hedge: str, reference: str, tolerance: float
) -> tuple[str, str]:
    """(status, detail) for a reply's statements against the reference; runs in the worker."""
    try:
        expected = real_symbols(parse_span(reference))
    except (ParseError, *CANDIDATE_FAULTS) as err:
        return "error", f"the reference answer cannot be read: {err}"
    if hedge:
        return "fail", prose_hedge_detail(hedge)
    try:
        answer = real_symbols(parse_span(final))
    except ParseError as err:
        if HEDGE_WORDS.search(final.lower()):
            return "fail", f"the answer {final[:40]!r} hedges; state exactly one final answer."
        return "fail", f"no readable answer: {err}"
    except CANDIDATE_FAULTS as err:
        return "fail", f"the answer cannot be read: {type(err).__name__}"
    try:
        different = [text for text in boxes if not _agrees(text, answer, box=True)]
        different += [text for text in lines if not _agrees(text, answer, box=False)]
        if different:
            return "fail", hedge_detail([final, *different])
        return same(answer, expected, tolerance if states_decimal(reference) else 0.0)
    except CANDIDATE_FAULTS as err:
        return "fail", f"the answer cannot be compared: {type(err).__name__}"


def _agrees(statement: str, answer: Any, box: bool) -> bool:
    """Whether another statement of the reply states the final answer's value."""
    try:
        value = real_symbols(parse_span(statement))
    except (ParseError, *CANDIDATE_FAULTS):
        return not box  # an unreadable answer line is prose; an unreadable box is an answer
    return same(value, answer, 0.0)[0] == "pass"


def states_decimal(span: str) -> bool:
    """Whether an answer span writes a decimal (``2.5``, ``1e-3``): the reference's own
    statement that it is approximate, the only place a tolerance belongs."""
    try:
        tokens = tokenize(normalise(span))
    except ParseError:
        return False
    return any(kind == "num" and not text.isdigit() for kind, text in tokens)


@hookimpl
def register_verifiers(register):
    register("math", MathVerifier)
