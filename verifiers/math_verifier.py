"""The ``math`` verifier: is a model's final answer equal to the reference answer?

Both texts are read by ``math_parse`` (a whitelist grammar, never ``eval``/``sympify``) and
compared by ``math_equivalence``: exact first (rationals are equal or not, full stop; so
``1/2004!`` differs from ``1/2006!``), then symbolic simplification, then a numeric check to
30 digits; the ``tolerance`` option adds a looser relative tolerance.

Every comparison runs in a killable worker process; one that takes longer than ``timeout`` is
a ``timeout`` verdict and the worker is replaced. A reference that cannot be parsed is an
``error`` (the task is broken, not the answer); a candidate that cannot be parsed is a ``fail``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from selfplay.api.verifier import Verdict, Verifier, VerifierOptions
from selfplay.plugins.hookspecs import hookimpl
from selfplay.verifiers.answers import MAX_TEXT_CHARS
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
        args = [candidate[-MAX_TEXT_CHARS:], reference[-MAX_TEXT_CHARS:], self.options.tolerance]
        result = self.worker.call(args, self.options.timeout)
        if result.outcome == "timeout":
            return Verdict("timeout", f"comparison took longer than {self.options.timeout:g} s")
        if result.outcome == "error":
            return Verdict("error", f"math worker: {result.detail}")
        status, detail = result.value
        return Verdict(status, detail)

    def close(self) -> None:
        self.worker.close()


@hookimpl
def register_verifiers(register):
    register("math", MathVerifier)
