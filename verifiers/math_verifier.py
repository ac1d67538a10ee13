"""The ``math`` verifier: is a model's final answer equal to the reference answer?

The final answer and the reply's other answer statements are found by the rule in
``answers`` (for the candidate, the game's answer format when the caller passes
``answer_pattern`` or a ``game`` with one; then boxes, then "answer:" lines, then a reply that
is one short line; never "the last number anywhere"). They are read by ``math_parse`` (a
whitelist grammar, never ``eval``/``sympify``) and compared by ``math_equivalence``.

One final answer: every other statement of the reply must have the same value as the final
answer, or the reply hedges and fails with a detail that says so (a box the grammar cannot
read counts as a different answer; an answer line it cannot read is prose). A value that
prose after a statement offers ("or possibly 3", "3 is also possible") must equal the final
answer too. Exact values are equal only when shown to be; the ``tolerance`` option applies
only where the reference states a decimal (``3.14``), never to exact values (``\\pi``,
``1/3``).

Every comparison runs in a killable worker process; one that takes longer than ``timeout`` is
a ``timeout`` verdict and the worker is replaced. A reference that cannot be parsed is an
``error`` (the task is broken, not the answer), except a reference in words
(``\\text{DNE}``), compared word for word, and one too large to compare, which a reply that
writes it identically states; a candidate without an answer, or whose answer cannot be
parsed or compared, is a ``fail``.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from selfplay.api.verifier import Verdict, Verifier, VerifierOptions, printable
from selfplay.plugins.hookspecs import hookimpl
from selfplay.verifiers.answers import (
    ParseError,
    extract_answer,
    find_statements,
    hedge_detail,
    hedge_word,
    prose_hedge_detail,
)
from selfplay.verifiers.math_equivalence import same
from selfplay.verifiers.math_parse import parse_span
from selfplay.verifiers.math_syntax import (
    TEXT_COMMANDS,
    Relation,
    normalise,
    real_symbols,
    tokenize,
)
from selfplay.verifiers.math_values import TooLarge
from selfplay.verifiers.worker import Worker

# The reference is sound, so an answer that breaks parsing or comparison is a wrong answer.
CANDIDATE_FAULTS = (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError)
WORDS = re.compile(r"[A-Za-z]+(?: [A-Za-z]+)*")


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
        offers = [list(offer) for offer in found.offers]
        statements = [found.final, found.boxes, found.lines, offers]
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
    final: str,
    boxes: list[str],
    lines: list[str],
    offers: list[list[str]],
    reference: str,
    tolerance: float,
) -> tuple[str, str]:
    """(status, detail) for a reply's statements against the reference; runs in the worker."""
    try:
        expected = real_symbols(parse_span(reference))
    except (ParseError, *CANDIDATE_FAULTS) as err:
        return _unreadable_reference([final, *boxes], offers, reference, err)
    try:
        answer = real_symbols(parse_span(final))
    except ParseError as err:
        if hedge_word(final):
            return "fail", f"the answer {final[:40]!r} hedges; state exactly one final answer."
        return "fail", f"no readable answer: {err}"
    except CANDIDATE_FAULTS as err:
        return "fail", f"the answer cannot be read: {type(err).__name__}"
    try:
        different = [text for text in boxes if not _agrees(text, answer, box=True)]
        different += [text for text in lines if not _agrees(text, answer, box=False)]
        if different:
            return "fail", hedge_detail([final, *different])
        for words, value in offers:
            if not _agrees(value, answer, box=True):
                return "fail", prose_hedge_detail(words)
        return same(answer, expected, tolerance if states_decimal(reference) else 0.0)
    except CANDIDATE_FAULTS as err:
        return "fail", f"the answer cannot be compared: {type(err).__name__}"


def _agrees(statement: str, answer: Any, box: bool) -> bool:
    """Whether another statement of the reply states the final answer's value; an equation
    of constants states their value when its sides are equal (``7 = 3 + 4`` states 7)."""
    try:
        value = real_symbols(parse_span(statement))
    except (ParseError, *CANDIDATE_FAULTS):
        return not box  # an unreadable answer line is prose; an unreadable box is an answer
    if isinstance(value, Relation) and value.ops == ("=",) and not _has_symbols(value):
        left, right = value.items
        if same(left, right, 0.0)[0] != "pass":
            return False
        value = left
    return same(value, answer, 0.0)[0] == "pass"


def _has_symbols(relation: Relation) -> bool:
    return any(getattr(item, "free_symbols", None) for item in relation.items)


def _unreadable_reference(
    stated: list[str], offers: list[list[str]], reference: str, err: Any
) -> tuple[str, str]:
    """The verdict when the reference cannot be read: an error (the sample is left out),
    except for a reference in words (``\\text{DNE}``), which only a reply in the same words
    states, and a reference too large to compare: a reply that writes it identically states
    it, one whose statements differ as written hedges, and any other is an error."""
    values = [*stated, *(value for _, value in offers)]
    words = _words(reference) if TEXT_COMMANDS.search(reference) else None
    if words is not None:
        if any(_words(text) != words for text in values):
            return "fail", "not the same words (the reference answer is in words)"
        return "pass", "the same words"
    if isinstance(err, TooLarge):
        written = [_written(text) for text in values]
        if all(tokens == _written(reference) for tokens in written):
            return "pass", "identical as written (too large to compare otherwise)"
        if any(tokens != written[0] for tokens in written[: len(stated)]):
            return "fail", hedge_detail(stated)
        for (words_offered, _), tokens in zip(offers, written[len(stated) :], strict=True):
            if tokens != written[0]:
                return "fail", prose_hedge_detail(words_offered)
    return "error", f"the reference answer cannot be read: {err}"


def _written(span: str) -> list[tuple[str, str]] | None:
    """The tokens of an answer as written (spacing and wrappers aside), None if it has none."""
    try:
        return tokenize(normalise(span))
    except ParseError:
        return None


def _words(span: str) -> str | None:
    """An answer written in words (``\\text{does not exist}``): its words in lower case."""
    words = normalise(span)
    if not WORDS.fullmatch(words):
        return None
    return " ".join(words.lower().split())


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
