"""The ``exact`` and ``numeric`` verifiers: plain string and number comparison.

``numeric`` (and ``exact`` with ``extract_answer`` on) read the final answer of a text by the
rule in ``answers`` (the last ``\\boxed{...}``, an ``answer: ...`` line, a one-line text;
never the last number anywhere), and fail a reply whose other answer statements state a
different answer (hedging): for ``exact`` its other boxes, for ``numeric`` its other boxes and
the answer lines that hold a number; prose that offers another value after a statement
hedges too, unless the value is the same answer (``Statements.offers``). For ``numeric`` the
answer must be one number (``x = 5``, ``$1,000$``, a Unicode minus and a final full stop
allowed); words around it make it no answer.
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
from selfplay.verifiers.answers import (
    ParseError,
    find_statements,
    hedge_detail,
    join_digit_groups,
    prose_hedge_detail,
)

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d{1,4})?(?:/\d+)?")
SPACES = re.compile(r"\s+")
MINUS = str.maketrans(dict.fromkeys("\u2010\u2011\u2012\u2013\u2212\ufe63\uff0d", "-"))
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
        if not self.options.extract_answer:
            same = self._normal(candidate) == self._normal(reference)
            return Verdict("pass", "same text") if same else Verdict("fail", "different text")
        try:
            expected = self._normal(find_statements(reference).final)
            found = find_statements(candidate)
        except ParseError as err:
            return Verdict("fail", str(err))
        answers = list(dict.fromkeys(self._normal(s) for s in (found.final, *found.boxes)))
        offered = [o.words for o in found.offers if self._normal(o.value) != answers[0]]
        if offered:
            return Verdict("fail", prose_hedge_detail(offered[0]))
        if len(answers) > 1:
            return Verdict("fail", hedge_detail(answers))
        return Verdict("pass" if answers[0] == expected else "fail", "same or different text")

    def _normal(self, text: str) -> str:
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
        found = find_statements(candidate)
        offered = [offer.words for offer in found.offers if _number(offer.value) != answer]
        if offered:
            return Verdict("fail", prose_hedge_detail(offered[0]))
        others = [text for text in found.boxes if _number(text) != answer]
        others += [text for text in found.lines if _number(text) not in (None, answer)]
        if others:
            return Verdict("fail", hedge_detail([found.final, *others]))
        allowed = Fraction(self.options.absolute) + Fraction(self.options.relative) * abs(expected)
        if abs(answer - expected) <= allowed:
            return Verdict("pass", "equal within tolerance")
        return Verdict("fail", f"{float(answer):g} differs from {float(expected):g}")


def read_number(text: str) -> Fraction | None:
    """The number in the final answer of ``text`` as an exact fraction, or None."""
    try:
        return _number(find_statements(text).final)
    except ParseError:
        return None


def _number(answer: str) -> Fraction | None:
    answer = answer.translate(MINUS).replace("$", "").strip().removesuffix(".").strip()
    answer = ASSIGNMENT.sub("", join_digit_groups(answer))
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
