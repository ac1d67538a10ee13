"""Attacks on the math verifier, kind by kind, and the right answers that must still pass.

Each corpus below is made of cases the verifier got wrong before this round (a hedge that
passed, an expression equal at three fixed points only, an equation read by one side, a
near-equal exact value, a correct form refused), next to cases that must keep their verdict.
The rule: no wrong answer passes, no right form is refused, no wrong value is an ``error``,
and no check runs past its time limit by more than 10%.
"""

from __future__ import annotations

import contextlib
import time

import pytest

from selfplay.verifiers.answers import find_statements
from selfplay.verifiers.math_verifier import MathVerifier

TIMEOUT = 2.0
BRACKET = r"\[([^\[\]\n]{1,40})\]"

# 1. Hedging: several different final answers fail, whichever is right.
HEDGES = [
    (r"\boxed{1} or \boxed{2}", "2"),
    (r"\boxed{1} or \boxed{2}", "1"),
    ("Answer: 1\nAnswer: 2", "2"),
    ("Answer: 1\nAnswer: 2", "1"),
    ("the answer is 2, or possibly 3", "2"),
    ("answer: 2 or 3", "3"),
    ("answer: 2, maybe 3", "2"),
    ("The answer is 3.\nWait, let me recheck.\nThe final answer is 4.", "4"),
    ("\\boxed{2}\n\nFinal answer: 3", "2"),
    ("\\boxed{2}\n\nFinal answer: 3", "3"),
    (r"\fbox{5} \boxed{6}", "6"),
    (r"\boxed{x = 2} \boxed{x = 3}", "3"),
    (r"\boxed{3 or 4} then \boxed{2}", "2"),
    (r"\boxed3 \boxed{2}", "2"),
    ("Answer: 7\n\\boxed{8}", "8"),
    (" ".join(rf"\boxed{{{k}}}" for k in range(25)), "24"),
    (r"\boxed{1/2} \boxed{0.4}", "0.4"),
    (r"\boxed{\{1, 2\}} \boxed{1}", "1"),
    (r"\boxed{2}" + " and some working\n" * 300 + r"\boxed{5}", "5"),
]
# ... while restating one value, in any form, is one answer; prose is not an answer.
ONE_ANSWER = [
    (r"\boxed{\frac{1}{2}} or \boxed{0.5}", "1/2"),
    ("Answer: 2\nSo the final answer is 2.", "2"),
    (r"\boxed{2} and again \boxed{2.0}", "2"),
    ("The answer is clear from the figure.\n\\boxed{5}", "5"),
    ("Answer: x = 3\n\\boxed{3}", "3"),
    ("The final answer is $\\boxed{\\boxed{3\\sqrt{2}}}$.", "sqrt(18)"),
    (r"\boxed{-1} \boxed{−1}", "-1"),
]
# With a game's answer format the action is the last span; a question is not an answer.
GAME_SPANS = [
    ("[ask: is it 3?] [4]", "4", "pass"),
    ("[3] then [4]", "4", "pass"),  # earlier spans are working, as in every game
    ("[4] [ask: is it 4?]", "4", "fail"),
    (r"\boxed{3} [4]", "4", "fail"),
    (r"Answer: 3" + "\n[4]", "4", "fail"),
    (r"\boxed{4} [4]", "4", "pass"),
]

# 2. Expressions with symbols: sampled at many seeded points, domains respected.
OLD_POINTS = "(x-67/198)(x-165/64)(x-148/193)"  # the three points every check used to share
SYMBOLIC_WRONG = [
    ("|x|/x", "1"),
    (r"\sqrt{x^2}", "x"),
    (f"x + {OLD_POINTS}", "x"),
    (f"x^2 + 10^{{-3}}{OLD_POINTS}", "x^2"),
    (r"|x^2 - 10^{-20}|", r"x^2 - 10^{-20}"),
    (r"\ln(x^2)", r"2\ln x"),
    (r"x + \sin(\pi x \cdot 10!)", "x"),
    (r"\sqrt{x}\sqrt{y}", r"\sqrt{xy}"),
    (r"\sqrt{(x-1)^2}", "x-1"),
    (r"|x - 10^{6}|", "x - 10^6"),
    (r"x + 10^{-40}x^2", "x"),
    (r"\sin(x + 10^{-40})", r"\sin x"),
    (r"\sqrt{x^2 + e^{-e^{100}}}", "|x|"),
    ("x^{1000} + 1", "x^{1000}"),
    ("|x| + |y|", "|x + y|"),
    (r"\frac{|x-1|}{x-1}", "1"),
    (r"\frac{1}{x}", "x"),
    (r"\sqrt{x^2+1}", "x + 1"),
    ("x^3 - x", "0"),
]
SYMBOLIC_RIGHT = [
    ("x^2/x", "x"),
    (r"\sqrt{x^2}", "|x|"),
    (r"\sqrt{x^2+2x+1}", "|x+1|"),
    (r"\frac{|x|}{x}", r"\frac{x}{|x|}"),
    (r"\sin(2x)", r"2\sin x\cos x"),
    (r"\frac{x^2-1}{x-1}", "x+1"),
    ("xy", "yx"),
    ("(x+y)^2", "x^2+2xy+y^2"),
    ("e^{x+y}", "e^x e^y"),
    (r"\frac{1}{\sqrt{x^2+1}}", r"\frac{\sqrt{x^2+1}}{x^2+1}"),
    (r"\tan x", r"\frac{\sin x}{\cos x}"),
    (r"\sqrt{(x-1)^2}", "|x-1|"),
    (r"\ln(x^2)", r"2\ln|x|"),
    (r"|2x|", r"2|x|"),
    ("|x|^2", "x^2"),
    (r"\sqrt{4x^2}", "2|x|"),
    (r"\cos^2 x - \sin^2 x", r"\cos(2x)"),
    (r"e^{\ln x}", "x"),
    (r"\sqrt{x^4}", "x^2"),
    (r"\sqrt{x^2 y^2}", "|xy|"),
    (r"\binom{n}{2}", r"\frac{n(n-1)}{2}"),
    (r"\frac{1}{x} + \frac{1}{y}", r"\frac{x+y}{xy}"),
]

# 3. Equations match as equations.
EQUATIONS_WRONG = [
    ("x = 2x+1", "y = 2x+1"),
    ("x = 3", "y = 3"),
    ("y = 2x+1", "y = 2x+2"),
    ("x^2 = 4", "x = 2"),
    ("y = 5", "x = 5"),
    ("x = 2x+1", "2x+1"),
    ("x + y = 1", "x - y = 1"),
    ("x = 1", "x = -1"),
    ("y = x^2", "x = y^2"),
]
EQUATIONS_RIGHT = [
    ("3 = x", "x = 3"),
    ("2x = 6", "x = 3"),
    ("y = 2x + 1", "2x + 1 = y"),
    ("y - 2x = 1", "y = 2x+1"),
    ("x = y", "y = x"),
    ("5", "x = 5"),
    ("y = 2x+1", "2x+1"),
    ("x^2 + y^2 = 1", "2x^2 + 2y^2 = 2"),
    ("x = 2, x = -3", r"\{-3, 2\}"),
]

# 4. Near-equal is not equal for exact values.
NEAR_MISSES = [
    (r"\pi + 10^{-40}", r"\pi"),
    ("1 + e^{-100}", "1"),
    (r"10^{40} + \pi", "10^{40}"),
    (r"\sqrt{2} + 10^{-50}", r"\sqrt2"),
    (r"\sqrt{\pi^2 + e^{-1000}}", r"\pi"),
    (r"e^{-e^{100}}", "0"),
    (r"(\sqrt{2}-1)^{1000}", "0"),
    (r"\sin(10^{-50})", "0"),
    (r"\cos(10^{-30})", "1"),
    (r"\sqrt{\pi^2 + e^{-e^{100}}}", r"\pi"),
    (r"\ln(1 + 10^{-60})", "0"),
    (r"e + 10^{-100000}", "e"),
    (r"\sqrt{1 + 10^{-10000}}", "1"),
    (r"\sqrt{2}", "1.41421356237309504880168872420969807856967"),
    (r"\frac{1}{3}", "0.3333333333333333333333333333333333"),
    (r"\frac{22}{7}", r"\pi"),
]
EXACTLY_EQUAL = [
    (r"\cos(\pi/7)+\cos(3\pi/7)+\cos(5\pi/7)", "1/2"),
    (r"\sqrt{3+2\sqrt2}", r"1+\sqrt2"),
    (r"\ln 8", r"3\ln2"),
    (r"e^{i\pi}", "-1"),
    (r"\sin^2(5)+\cos^2(5)", "1"),
    (r"\ln 2 + \ln 3", r"\ln 6"),
    (r"\frac{\sqrt6+\sqrt2}{4}", r"\cos(\pi/12)"),
    (r"\frac{1}{\sqrt2}", r"\frac{\sqrt2}{2}"),
    (r"\tan(\pi/8)", r"\sqrt2 - 1"),
]
TOWERS = [
    "2^{2^{2^{2^{2}}}}",
    "9^{9^{9}}",
    r"e^{e^{e^{10}}}",
    r"\sqrt{2}^{\sqrt{2}^{\sqrt{2}^{100}}}",
    "(1+10^{-100})^{100000}",
    r"(\sqrt2 - 1)^{100000} + 1",
    r"\sin(10^{100000})",
    "10^{100000} + 1 - 10^{100000}",
]

# 5. Right answers in forms that were refused.
FORMS = [
    ("‐1", "-1"),
    ("‑1", "-1"),
    ("‒1", "-1"),
    ("﹣1", "-1"),
    ("－1", "-1"),
    ("2²", "4"),
    ("x²", "x^2"),
    ("10⁻³", "0.001"),
    ("½", "1/2"),
    ("2½", "5/2"),
    ("¾", "0.75"),
    ("-½", "-0.5"),
    ("1\u00a0000", "1000"),
    ("1\u2009000\u2009000", "10^6"),
    ("12\u202f345", "12345"),
    ("1\u2007000", "1000"),
    (r"\boxed {1}", "1"),
    (r"\boxed1", "1"),
    (r"\boxed 7.", "7"),
    (r"1\over 2", "1/2"),
    (r"{1 \over 2}", "0.5"),
    (r"\frac{1\over 2}{3}", "1/6"),
    ("5!!", "15"),
    ("6!!", "48"),
    ("(5!)!", "120!"),
    (r"{5 \choose 2}", "10"),
    (r"\mathbb{R}", r"(-\infty,\infty)"),
    (r"x \in \mathbb{R}", r"(-\infty, \infty)"),
    ("ℝ", r"\mathbb{R}"),
    (r"\mathbb{R} \setminus \{0\}", r"(-\infty, 0) \cup (0, \infty)"),
    ("１２", "12"),
    (r"\boxed{7}" + "\nSome more prose about how it was found." * 400, "7"),
    ("Final answer: 7" + "\n" + "x" * 5000 + "\nThat is all.", "7"),
]
FORMS_WRONG = [("5!!", "120!"), ("2²", "22"), ("1\u00a0000", "1"), ("½", "12"), ("5!!!", "15")]


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


@pytest.mark.parametrize("text,reference", HEDGES, ids=range(len(HEDGES)))
def test_a_reply_with_different_final_answers_fails_and_says_so(verifier, text, reference):
    verdict = timed(verifier, text, reference)
    assert verdict.status == "fail", verdict
    assert "different final answers" in verdict.detail or "hedges" in verdict.detail


@pytest.mark.parametrize("text,reference", ONE_ANSWER, ids=range(len(ONE_ANSWER)))
def test_one_value_stated_several_times_is_one_answer(verifier, text, reference):
    assert timed(verifier, text, reference).status == "pass"


@pytest.mark.parametrize("text,reference,status", GAME_SPANS, ids=range(len(GAME_SPANS)))
def test_a_games_action_is_the_last_span_and_a_question_is_no_answer(
    verifier, text, reference, status
):
    assert timed(verifier, text, reference, answer_pattern=BRACKET).status == status


def _wrong(verifier, cases):
    for candidate, reference in cases:
        verdict = timed(verifier, candidate, reference)
        assert verdict.status in ("fail", "timeout"), (candidate, reference, verdict)
        verdict = timed(verifier, reference, candidate)  # the other way round
        unreadable = "reference answer cannot be read" in verdict.detail  # too costly to take
        assert verdict.status in ("fail", "timeout") or unreadable, (reference, verdict)


def _right(verifier, cases):
    for candidate, reference in cases:
        for one, other in ((candidate, reference), (reference, candidate)):
            verdict = timed(verifier, one, other)
            assert verdict.status == "pass", (one, other, verdict)


@pytest.mark.parametrize("case", SYMBOLIC_WRONG, ids=range(len(SYMBOLIC_WRONG)))
def test_expressions_differing_anywhere_fail(verifier, case):
    _wrong(verifier, [case])
    assert timed(verifier, *case).status == "fail"  # never an error, and decided in time


@pytest.mark.parametrize("case", SYMBOLIC_RIGHT, ids=range(len(SYMBOLIC_RIGHT)))
def test_equal_expressions_pass_both_ways(verifier, case):
    _right(verifier, [case])


def test_sampling_is_a_pure_function_of_the_two_expressions(verifier):
    verdicts = {verifier.verify("|x|/x", "1").detail for _ in range(3)}
    assert len(verdicts) == 1
    other = verifier.verify("|y|/y", "1").detail
    assert "differ" in other and "y = " in other


@pytest.mark.parametrize("case", EQUATIONS_WRONG, ids=range(len(EQUATIONS_WRONG)))
def test_equations_match_as_equations(verifier, case):
    _wrong(verifier, [case])


@pytest.mark.parametrize("case", EQUATIONS_RIGHT, ids=range(len(EQUATIONS_RIGHT)))
def test_the_same_equation_written_otherwise_passes(verifier, case):
    _right(verifier, [case])


@pytest.mark.parametrize("case", NEAR_MISSES, ids=range(len(NEAR_MISSES)))
def test_near_equal_exact_values_are_not_equal(verifier, case):
    _wrong(verifier, [case])


@pytest.mark.parametrize("case", EXACTLY_EQUAL, ids=range(len(EXACTLY_EQUAL)))
def test_exactly_equal_values_pass(verifier, case):
    _right(verifier, [case])


@pytest.mark.parametrize("tower", TOWERS, ids=range(len(TOWERS)))
def test_towers_and_huge_exponents_stay_bounded(verifier, tower):
    assert timed(verifier, tower, "7").status in ("fail", "timeout")
    assert timed(verifier, "7", tower).status in ("fail", "timeout", "error")


@pytest.mark.parametrize("case", FORMS, ids=range(len(FORMS)))
def test_right_answers_in_every_form_pass(verifier, case):
    candidate, reference = case
    assert timed(verifier, candidate, reference).status == "pass"
    if "\n" not in candidate:
        assert timed(verifier, reference, candidate).status == "pass"


@pytest.mark.parametrize("case", FORMS_WRONG, ids=range(len(FORMS_WRONG)))
def test_the_new_forms_do_not_widen_what_passes(verifier, case):
    assert timed(verifier, *case).status == "fail"


def test_the_tolerance_belongs_to_a_stated_decimal():
    loose = MathVerifier(timeout=TIMEOUT, tolerance=1e-3)
    try:
        assert loose.verify(r"\pi", "3.1416").status == "pass"
        assert loose.verify(r"\pi + 10^{-5}", r"\pi").status == "fail"
        assert loose.verify("1.0001", "1").status == "fail"
        assert loose.verify("1.0001", "1.0").status == "pass"
    finally:
        loose.close()


@pytest.mark.parametrize(
    "text",
    [
        "x" * 2_000_000,
        "\\boxed{" * 200_000,
        "\\boxed{1}" * 200_000,
        "answer: 1\n" * 200_000,
        "{" * 1_000_000 + "}" * 1_000_000,
        "Answer: " + " " * 2_000_000 + "x",
        "final " * 300_000,
        "\\boxed{" + "{" * 2_000_000,
    ],
    ids=range(8),
)
def test_extraction_is_linear_in_the_length_of_the_reply(text):
    began = time.monotonic()
    with contextlib.suppress(ValueError):
        find_statements(text)
    assert time.monotonic() - began < 2.0
