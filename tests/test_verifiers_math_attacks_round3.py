"""Attacks on the math verifier, round 3: each kind found from outside, and cases of our own.

Found (one example each): a box that holds a box was dropped whole (``\\boxed{3 - \\boxed{1}}``
passed against 1); a hedge in prose after a box passed (``The answer is $\\boxed{2}$, or
possibly 3.``); a leading-zero digit group was read as thousands (``0,500`` passed against
500); ``nan`` was read as the product n*a*n (it passed against ``n^2 a``); and the time of
``exp(exp(exp(exp(100))))`` against 1 depended on the hash seed (at once under some seeds,
into the 5-s limit under others). The rules they break are in docs/verifiers.md, sections
1-3. No wrong answer passes, no right form is refused, no wrong value is an ``error``, no
check runs past its time limit by more than 10%.
"""

from __future__ import annotations

import contextlib
import time

import pytest

from selfplay.verifiers.answers import find_statements
from selfplay.verifiers.basic import Exact, Numeric
from selfplay.verifiers.math_verifier import MathVerifier

TIMEOUT = 2.0
BRACKET = r"\[([^\[\]\n]{1,40})\]"

# 1. A box inside a box, or inside the maths or answer line around it, is read with it.
NESTED_WRONG = [
    (r"\boxed{3 - \boxed{1}}", "1"),
    (r"\boxed{3 - \boxed{1}}", "2"),
    (r"\boxed{x \ne \boxed{3}}", "3"),
    (r"\boxed{\boxed{2} \text{ or } 3}", "2"),
    (r"\boxed{\boxed{2} \text{ or } 3}", "3"),
    (r"\boxed{2 \text{ or } \boxed{2}}", "2"),
    (r"\fbox{\boxed{1} + 1}", "1"),
    (r"\fbox{\boxed{1} + 1}", "2"),
    (r"\boxed{-\boxed{2}}", "2"),
    (r"\boxed{\frac{\boxed{1}}{2}}", "1"),
    (r"\boxed{\sqrt{\boxed{4}}}", "4"),
    (r"\boxed{\boxed1 0}", "1"),
    (r"\boxed{2\boxed{3}}", "3"),
    (r"\boxed{\boxed{3}^2}", "3"),
    (r"\boxed{x \geq \boxed{3}}", "3"),
    ("Answer: 3 - \\boxed{1}", "1"),
    ("Answer: x \\ne \\boxed{3}", "3"),
    (r"So $3 - \boxed{1}$.", "1"),
    (r"Hence $x \ne \boxed{3}$.", "3"),
    (r"$\boxed{3}^{2}$", "3"),
    (r"\(\boxed{2} + 1\)", "2"),
    (r"\[ 10 - \boxed{4} \]", "4"),
    (r"The answer is $x \geq \boxed{3}$.", "3"),
    ("We get\n3 - \\boxed{1}\nas claimed.", "1"),
    ("\\begin{equation}\n  3 - \\boxed{1}\n\\end{equation}", "1"),
    (r"$\boxed{x^2} + C$", "x^2"),
]
NESTED_RIGHT = [
    (r"\boxed{\boxed{5}}", "5"),
    (r"\fbox{\boxed{5}}", "5"),
    (r"\boxed{\boxed{\boxed{5}}}", "5"),
    (r"\boxed{x = \boxed{3}}", "3"),
    (r"$x = \boxed{3}$", "3"),
    (r"The final answer is $P(A) = \boxed{\frac{1}{2}}$.", "1/2"),
    (r"$n = 2k + 1 = \boxed{7}$", "7"),
    (r"\boxed{\boxed{5 cm}}", "5"),
    (r"$\boxed{7} \text{ cm}$", "7"),
    (r"\( \boxed{5} \) cm", "5"),
    ("The final answer is $\\boxed{5}$. I hope it is correct.", "5"),
    ("The answers:\n- \\boxed{5}", "5"),
    (r"The area is $\boxed{12}\ \text{cm}^2$.", "12"),
    (r"$\boxed{12 \text{ cm}^2}$", "12"),
    (r"$\boxed{5}\%$", "5"),
    ("\\begin{align}\n  x &= 2 + 1 \\\\\n    &= \\boxed{3}\n\\end{align}", "3"),
]

# 2. After a statement, prose may not offer another value.
PROSE_HEDGES = [
    ("The answer is $\\boxed{2}$, or possibly 3.", "2"),
    ("The answer is $\\boxed{2}$, or possibly 3.", "3"),
    (r"\boxed{2}, or possibly 3.", "2"),
    ("\\boxed{2}\nOr maybe 3.", "2"),
    ("\\boxed{2}\n\nPerhaps it is three.", "2"),
    (r"\boxed{2} (or $3$ if zero counts)", "2"),
    (r"\boxed{2}, unless $n = 0$.", "2"),
    (r"\boxed{2}. Alternatively \pi.", "2"),
    ("The answer is 2, or possibly 3.\n\\boxed{2}", "2"),
    ("Answer: 2 or 3\n\\boxed{2}", "2"),
    ("Final answer: 7, though it is probably 8", "7"),
    ("\\boxed{12}\nEither way, 12 or 13.", "12"),
    (r"\boxed{2}" + " or" + " so" * 5000 + " 3", "2"),
    (r"\boxed{1/2} or \boxed{0.5}, or maybe 0.4", "1/2"),
    ("Answer: 3, or \\boxed{2}", "2"),
    (r"\boxed{2}, or someone might say two", "2"),
]
PROSE_FINE = [
    (r"\boxed{\frac12} or \boxed{0.5}", "1/2"),
    ("I tried 2 or 3 first; checking gives \\boxed{3}.", "3"),
    ("Either 2 or 3 looked right.\nThe answer is 3.", "3"),
    (r"\boxed{3}, since x is positive.", "3"),
    ("\\boxed{3}\n\nThis is the only solution.", "3"),
    ("The answer is clear from the figure.\n\\boxed{5}", "5"),
    (r"\boxed{7}" + "\nSome more prose about how it was found." * 400, "7"),
]

# 3. Digit groups: a first group of 1-3 digits not starting with 0, then groups of three.
GROUPS_WRONG = [
    ("0,500", "500"),
    ("0\\,500", "500"),
    ("0{,}500", "500"),
    ("0\u2009500", "500"),
    ("0\u00a0500", "500"),
    ("00,500", "500"),
    ("-0,500", "-500"),
    ("０,５００", "500"),
    ("1,00", "100"),
    ("1,0000", "10000"),
    ("1234,567", "1234567"),
    ("12,345,67", "1234567"),
    ("1,000,00", "100000"),
    ("1,000\\,000", "1000000"),
    ("$0,500$", "500"),
    (r"\boxed{0,500}", "500"),
]
GROUPS_RIGHT = [
    ("1,000", "1000"),
    ("12,345,678", "12345678"),
    ("1{,}000{,}000", "10^6"),
    ("1,050", "1050"),
    ("1,000.5", "1000.5"),
    ("-1,000", "-1000"),
    ("１,０００", "1000"),
    ("$1,000$", "1000"),
    ("1\\,000\\,000", "1000000"),
]

# 4. Non-finite values: infinity is one, in any spelling; "not a number" is none.
NOT_A_NUMBER = [
    ("nan", "n^2 a"),
    ("nan", "a n^2"),
    ("NaN", "N^2 a"),
    ("nan", "0"),
    ("dne", "d n e"),
    ("DNE", "END"),
    (r"\infty - \infty", "0"),
    (r"0 \cdot \infty", "0"),
    (r"\frac{\infty}{\infty}", "1"),
    (r"1^{\infty}", "1"),
    ("x = nan", "x = n^2 a"),
    ("Inf", "I n f"),
    ("inf", r"-\infty"),
]
NO_REFERENCE = ["nan", "NaN", "NAN", "DNE", "x = nan"]
INFINITY_RIGHT = [
    ("Inf", r"\infty"),
    ("INF", "∞"),
    ("-inf", r"-\infty"),
    ("Infinity", "oo"),
    ("+Infinity", r"\infty"),
    ("(-inf, 3]", r"(-\infty, 3]"),
]

# 5. A statement longer than the cap as written is never read cut: padding that the
# normalisation drops (LaTeX spacing, empty \text{}) used to push the tail past the cut.
CUT = [
    ("\\boxed{" + "\\," * 198 + "1234567}", "12345"),
    ("Answer: " + "\\," * 198 + "1234567", "12345"),
    ("\\boxed{" + "\\text{}" * 57 + "9876543}", "98"),
    ("The final answer is " + "\\quad " * 66 + "98765432", "98765"),
]

# 6. Towers: refused at once, whatever the caller's hash seed.
TOWERS = [
    "exp(exp(exp(exp(100))))",
    r"e^{e^{e^{100}}}",
    r"\exp(\exp(\exp(100)))",
    r"e^{e^{e^{e^{100}}}}",
    r"\exp(e^{\exp(100)})",
    r"2^{e^{100}}",
    r"x^{e^{100}}",
    r"e^{\pi \cdot 10^{5}}",
    r"(e^{e})^{e^{e^{e}}}",
    r"\sin(e^{e^{100}})",
    r"\ln(e^{e^{100}})",
    r"e^{-e^{100}}",
    r"\sqrt{\pi^2 + e^{-e^{100}}}",
]


@pytest.fixture(scope="module")
def verifier():
    checker = MathVerifier(timeout=TIMEOUT)
    checker.start()
    yield checker
    checker.close()


def timed(verifier: MathVerifier, candidate: str, reference: str, **ctx):
    verifier.start()  # a timeout replaced the worker: its successor warms up outside the clock
    began = time.monotonic()
    verdict = verifier.verify(candidate, reference, **ctx)
    assert time.monotonic() - began <= 1.1 * TIMEOUT, (candidate, reference)
    return verdict


@pytest.mark.parametrize("case", NESTED_WRONG, ids=range(len(NESTED_WRONG)))
def test_a_box_inside_a_statement_is_read_with_it(verifier, case):
    verdict = timed(verifier, *case)
    assert verdict.status == "fail", (case, verdict)


@pytest.mark.parametrize("case", NESTED_RIGHT, ids=range(len(NESTED_RIGHT)))
def test_a_box_that_is_the_whole_statement_or_one_side_of_it_passes(verifier, case):
    assert timed(verifier, *case).status == "pass", case


@pytest.mark.parametrize("case", PROSE_HEDGES, ids=range(len(PROSE_HEDGES)))
def test_prose_after_a_statement_may_not_offer_another_value(verifier, case):
    verdict = timed(verifier, *case)
    assert verdict.status == "fail", (case, verdict)
    assert "hedges" in verdict.detail or "different final answers" in verdict.detail, verdict


def test_a_prose_hedge_fails_with_the_games_answer_format_too(verifier):
    verdict = timed(verifier, "\\boxed{4}, or maybe 5. [4]", "4", answer_pattern=BRACKET)
    assert verdict.status == "fail" and "hedges" in verdict.detail, verdict
    assert timed(verifier, "It is 4 or 5; checking: [4]", "4", answer_pattern=BRACKET).status == (
        "pass"
    )


@pytest.mark.parametrize("case", PROSE_FINE, ids=range(len(PROSE_FINE)))
def test_working_and_prose_without_another_value_pass(verifier, case):
    assert timed(verifier, *case).status == "pass", case


@pytest.mark.parametrize("case", GROUPS_WRONG, ids=range(len(GROUPS_WRONG)))
def test_a_number_not_written_in_groups_is_not_joined(verifier, case):
    assert timed(verifier, *case).status == "fail", case


@pytest.mark.parametrize("case", GROUPS_RIGHT, ids=range(len(GROUPS_RIGHT)))
def test_digit_groups_are_joined(verifier, case):
    assert timed(verifier, *case).status == "pass", case
    assert timed(verifier, case[1], case[0]).status == "pass", case


def test_the_exact_and_numeric_verifiers_fail_a_prose_hedge_too():
    hedged = "The answer is $\\boxed{2}$, or possibly 3."
    for checker in (Numeric(), Exact(extract_answer=True)):
        verdict = checker.verify(hedged, "2")
        assert verdict.status == "fail" and "hedges" in verdict.detail, verdict
        assert checker.verify("The answer is $\\boxed{2}$.", "2").status == "pass"


def test_the_numeric_verifier_reads_digit_groups_by_the_same_rule():
    numeric = Numeric()
    assert numeric.verify("0,500", "500").status == "fail"
    assert numeric.verify("12,345,67", "1234567").status == "fail"
    assert numeric.verify("12,345,678", "12345678").status == "pass"


@pytest.mark.parametrize("case", NOT_A_NUMBER, ids=range(len(NOT_A_NUMBER)))
def test_not_a_number_is_no_answer_and_never_letters(verifier, case):
    for candidate, reference in (case, case[::-1]):
        verdict = timed(verifier, candidate, reference)
        unreadable = "reference answer cannot be read" in verdict.detail
        assert verdict.status == "fail" or (verdict.status == "error" and unreadable), verdict


@pytest.mark.parametrize("reference", NO_REFERENCE)
def test_a_reference_that_is_not_a_number_is_an_error_never_a_pass(verifier, reference):
    for candidate in (reference, reference.lower(), "n^2 a", "0"):
        verdict = timed(verifier, candidate, reference)
        assert verdict.status == "error" and "cannot be read" in verdict.detail, verdict


@pytest.mark.parametrize("case", INFINITY_RIGHT, ids=range(len(INFINITY_RIGHT)))
def test_infinity_in_any_spelling_is_infinity(verifier, case):
    assert timed(verifier, *case).status == "pass", case
    assert timed(verifier, case[1], case[0]).status == "pass", case


@pytest.mark.parametrize("case", CUT, ids=range(len(CUT)))
def test_a_statement_longer_than_the_cap_is_never_read_cut(verifier, case):
    assert timed(verifier, *case).status == "fail", case


@pytest.mark.parametrize("tower", TOWERS, ids=range(len(TOWERS)))
def test_an_exponent_beyond_the_cap_is_refused_at_once(verifier, tower):
    began = time.monotonic()
    verdict = verifier.verify(tower, "1")
    assert time.monotonic() - began < 0.5 * TIMEOUT, tower
    assert verdict.status == "fail" and "exponent is larger" in verdict.detail, verdict


def test_a_verdict_and_its_cost_do_not_depend_on_the_callers_hash_seed(monkeypatch):
    cases = [("exp(exp(exp(exp(100))))", "1"), (r"x + \sin(\pi x \cdot 10!)", "x")]
    seen = set()
    for seed in ("0", "1", "3"):
        monkeypatch.setenv("PYTHONHASHSEED", seed)  # the worker is started with this env
        checker = MathVerifier(timeout=TIMEOUT)
        try:
            checker.start()
            for candidate, reference in cases:
                began = time.monotonic()
                verdict = checker.verify(candidate, reference)
                assert time.monotonic() - began < 0.5 * TIMEOUT, (seed, candidate, verdict)
                seen.add((candidate, verdict.status, verdict.detail))
        finally:
            checker.close()
    assert len(seen) == len(cases), seen


def test_a_reply_that_states_an_answer_over_a_thousand_times_has_none(verifier):
    assert timed(verifier, "\\boxed{1} " * 1000, "1").status == "pass"
    verdict = timed(verifier, "\\boxed{1} " * 1001, "1")
    assert verdict.status == "fail" and "more than 1000 times" in verdict.detail


@pytest.mark.parametrize(
    "text",
    [
        "\\boxed{" * 100_000 + "1" + "}" * 100_000,
        "\\boxed{1} or " * 200_000,
        "$\\boxed{1}$ " * 200_000,
        "\\boxed{2}" + " or" * 500_000,
        "\\boxed{2} " + "$" * 1_000_000,
        "answer: 1 or x\n" * 200_000,
        "\\boxed{\\boxed{" + "x" * 2_000_000,
        "$" + "\\boxed{1}" * 900 + "x" * 1_000_000,
    ],
    ids=range(8),
)
def test_extraction_stays_linear_with_nested_boxes_and_hedges(text):
    began = time.monotonic()
    with contextlib.suppress(ValueError):
        find_statements(text)
    assert time.monotonic() - began < 2.0
