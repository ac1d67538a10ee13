"""The ``math`` verifier: is a model's final answer equal to the reference answer?

The answer span of each text is found by the rule in ``answers`` (for the candidate, the
game's answer format when the caller passes ``answer_pattern`` or a ``game`` with one; then
``\\boxed{}``, then an "answer:" line, then a text that is one short line; never "the last
number anywhere"). The spans are read by ``math_parse`` (a whitelist grammar, never
``eval``/``sympify``) and compared by ``math_equivalence``: exact first (rationals are equal
or not, full stop; so ``1/2004!`` differs from ``1/2006!``), then symbolic simplification,
then a numeric check to 30 digits; the ``tolerance`` option adds a looser relative tolerance.
Tuples, sets, intervals, inequalities and percentages compare as that module says.

Every comparison runs in a killable worker process; one that takes longer than ``timeout`` is
a ``timeout`` verdict and the worker is replaced. A reference that cannot be parsed is an
``error`` (the task is broken, not the answer); a candidate without an answer span, or whose
span cannot be parsed, is a ``fail``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from selfplay.api.verifier import Verdict, Verifier, VerifierOptions, printable
from selfplay.plugins.hookspecs import hookimpl
from selfplay.verifiers.answers import MAX_TEXT_CHARS, ParseError, extract_answer
from selfplay.verifiers.worker import Worker


class MathOptions(VerifierOptions):
    timeout: float = Field(default=5.0, gt=0, le=300, description="Seconds per comparison.")
    tolerance: float = Field(
        default=0.0,
        ge=0,
        lt=1,
        description="Relative tolerance after the exact checks fail (0: exact answers only).",
    )
    memory_mb: int = Field(
        default=2048, ge=256, description="Address-space limit of the worker process (MiB)."
    )


class MathVerifier(Verifier):
    """Answer equivalence with sympy: exact first, never eval; runs in a killable worker."""

    name = "math"
    Options = MathOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.worker = Worker(
            "selfplay.verifiers.math_equivalence:compare", memory_mb=self.options.memory_mb
        )

    def start(self) -> None:
        """Start the worker now instead of on the first check (it takes a second or so)."""
        self.worker.start()

    def check(self, candidate: str, reference: str, **ctx: Any) -> Verdict:
        pattern = answer_format(ctx)
        try:
            expected = extract_answer(reference[-MAX_TEXT_CHARS:])
        except ParseError as err:
            return Verdict("error", f"the reference has no answer: {err}")
        try:
            answer = extract_answer(candidate[-MAX_TEXT_CHARS:], pattern)
        except ParseError as err:
            return Verdict("fail", str(err))
        args = [answer, expected, self.options.tolerance]
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


@hookimpl
def register_verifiers(register):
    register("math", MathVerifier)
