"""The ``exact`` and ``numeric`` verifiers: plain string and number comparison.

``numeric`` (and ``exact`` with ``extract_answer`` on) read the answer span of a text by the
rule in ``answers`` (the last ``\\boxed{...}``, an ``answer: ...`` line, a one-line text;
never the last number anywhere). For ``numeric`` the span must then be one number (``x = 5``,
``$1,000$`` and a final full stop allowed); a span with words around its number is no answer.
Numbers are read with ``fractions.Fraction`` from a strictly matched literal, so ``0.1`` is
exactly 1/10 and no text is evaluated.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from pydantic import Field

from selfplay.api.verifier import Verdict, Verifier, VerifierOptions
from selfplay.plugins.hookspecs import hookimpl
from selfplay.verifiers.answers import MAX_TEXT_CHARS, ParseError, extract_answer

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d{1,4})?(?:/\d+)?")
SPACES = re.compile(r"\s+")
DIGIT_GROUP = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
ASSIGNMENT = re.compile(r"^[A-Za-z]\s*=\s*")


class ExactOptions(VerifierOptions):
    case_sensitive: bool = Field(default=False, description="Compare letter case too.")
    extract_answer: bool = Field(
        default=False, description="Compare only the answer part (\\boxed{...}, 'answer: ...')."
    )


class Exact(Verifier):
    """Normalised string equality: whitespace collapsed, a final full stop dropped."""

    name = "exact"
    Options = ExactOptions

    def check(self, candidate: str, reference: str, **ctx: Any) -> Verdict:
        if self._normal(candidate) == self._normal(reference):
            return Verdict("pass", "same text")
        return Verdict("fail", "different text")

    def _normal(self, text: str) -> str:
        text = text[-MAX_TEXT_CHARS:]
        if self.options.extract_answer:
            try:
                text = extract_answer(text)
            except ParseError:
                return "\0no answer"  # never equal to a normalised text
        text = SPACES.sub(" ", text).strip().removesuffix(".").strip()
        return text if self.options.case_sensitive else text.casefold()


class NumericOptions(VerifierOptions):
    relative: float = Field(default=1e-9, ge=0, lt=1, description="Relative tolerance.")
    absolute: float = Field(default=0.0, ge=0, description="Absolute tolerance.")


class Numeric(Verifier):
    """Number equality within |a - b| <= absolute + relative * |reference|."""

    name = "numeric"
    Options = NumericOptions

    def check(self, candidate: str, reference: str, **ctx: Any) -> Verdict:
        expected = read_number(reference)
        if expected is None:
            return Verdict("error", f"the reference {reference[:40]!r} is not a number")
        answer = read_number(candidate)
        if answer is None:
            return Verdict("fail", "no number in the answer")
        allowed = Fraction(self.options.absolute) + Fraction(self.options.relative) * abs(expected)
        if abs(answer - expected) <= allowed:
            return Verdict("pass", "equal within tolerance")
        return Verdict("fail", f"{float(answer):g} differs from {float(expected):g}")


def read_number(text: str) -> Fraction | None:
    """The number in the answer part of ``text`` as an exact fraction, or None."""
    try:
        answer = extract_answer(text[-MAX_TEXT_CHARS:])
    except ParseError:
        return None
    answer = answer.replace("$", "").strip().removesuffix(".").strip()
    answer = ASSIGNMENT.sub("", DIGIT_GROUP.sub("", answer))
    if NUMBER.fullmatch(answer) is None:
        return None
    try:
        return Fraction(answer)
    except (ValueError, ZeroDivisionError):
        return None


@hookimpl
def register_verifiers(register):
    register("exact", Exact)
    register("numeric", Numeric)
