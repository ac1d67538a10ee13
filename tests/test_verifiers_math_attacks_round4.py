"""Attacks on the math verifier, round 4: each kind found from outside, and cases of our own.

Found (one example each): a box that is one side of an equation was read alone when the other
side changed its meaning (``$x = 1 \\text{ or } x = \\boxed{2}$`` passed against 2, so did
``$x = \\pm\\boxed{3}$``); prose that offered another value without a hedge word passed
(``So we get \\boxed{2}; 3 is also possible.``), and so did ``or`` written with a Cyrillic о;
and the round-3 hardening refused right answers: "one" read as a number, "part 2" read as
an offer, an equal restatement, ``$\\boxed{7} = 3 + 4$``, 22 nested boxes, a tower over the
caps against itself, ``\\text{DNE}`` against itself; ``\\boxed{[1,100]}`` read as 1100. The
rules they break are in docs/verifiers.md, sections 1-3.
"""

from __future__ import annotations

import contextlib
import time

import pytest

from selfplay.verifiers.answers import find_statements, join_digit_groups
from selfplay.verifiers.basic import Exact, Numeric
from selfplay.verifiers.math_verifier import MathVerifier
from selfplay.verifiers.replies.lookalikes import fold

TIMEOUT = 2.0
TOWER = r"e^{e^{e^{e^{10}}}}"

# 1. A box whose surrounding maths changes its meaning is not read alone.
CHANGED_MEANING = [
    (r"$x = 1 \text{ or } x = \boxed{2}$", "2"),
    (r"$x = 1 \text{ or } x = \boxed{2}$", "1"),
    (r"$x = \pm\boxed{3}$", "3"),
    (r"$x = \pm \boxed{3}$", "-3"),
    (r"$x = ±\boxed{3}$", "3"),
    (r"$x = \mp\boxed{3}$", "3"),
    (r"$\text{not } x = \boxed{3}$", "3"),
    (r"$\neg (x = \boxed{3})$", "3"),
    (r"$x = 1 \lor x = \boxed{2}$", "2"),
    (r"$x = 1 \vee x = \boxed{2}$", "2"),
    (r"$x = 1 ∨ x = \boxed{2}$", "2"),
    (r"$x = 1 \text{ OR } x = \boxed{2}$", "2"),
    (r"$x = 1 \mathrm{or}\ x = \boxed{2}$", "2"),
    (r"$x = 1 \textsf{ or } x = \boxed{2}$", "2"),
    ("$x = 1 \\text{ \u043er } x = \\boxed{2}$", "2"),  # Cyrillic о
    ("$x = 1 \\text{ o\u200br } x = \\boxed{2}$", "2"),  # a zero-width space inside
    (r"$x = 1, x = \boxed{2}$", "2"),
    (r"$x = 1; x = \boxed{2}$", "2"),
    (r"$x = 1 \quad x = \boxed{2}$", "2"),
    (r"$x \approx \boxed{3}$", "3"),
    (r"$\boxed{3}\text{ or more}$", "3"),
    (r"$\boxed{3} \text{ or } 4$", "3"),
    (r"$\text{at least } \boxed{3}$", "3"),
    (r"\(x = 1 \text{ or } x = \boxed{2}\)", "2"),
    (r"\[x = 1 \text{ or } x = \boxed{2}\]", "2"),
    (r"\boxed{x = 1 \text{ or } x = \boxed{2}}", "2"),
    (r"\boxed{\pm\boxed{3}}", "3"),
    ("x = 1 or x = \\boxed{2}", "2"),
    ("It is 3 or \\boxed{2}.", "2"),
    ("x = \\pm\\boxed{3}", "3"),
    ("The answer is $x = 1$ or $x = \\boxed{2}$.", "2"),
    ("Answer: either 3 or the value \\boxed{2}", "2"),
    ("x = -\\boxed{3} or \\boxed{3}", "3"),
    (r"$x = -\boxed{3}, \boxed{3}$", "3"),
    (r"$\boxed{7} = 8$", "7"),
]
MEANING_KEPT = [
    (r"$x = \boxed{3}$", "3"),
    (r"$\therefore x = \boxed{3}$", "3"),
    (r"$\text{Area} = \boxed{12}$", "12"),
    (r"$\sin\theta = \boxed{\frac12}$", "1/2"),
    (r"$\gcd(12, 18) = \boxed{6}$", "6"),
    (r"$3 + 4 = \boxed{7}$", "7"),
    (r"$\boxed{5}\text{ apples}$", "5"),
    (r"\[ \text{The number of ways is } \boxed{10}. \]", "10"),
    (r"\[ \boxed{5} \quad \text{cm} \]", "5"),
    ("So, x = \\boxed{3}.", "3"),
    ("Hence, or otherwise, we get \\boxed{3}.", "3"),
    ("Since $x > 0$, we get \\boxed{2} and $y$ is free.", "2"),
    ("Since $a$ and $b$ are positive, the answer is $\\boxed{2}$.", "2"),
    (r"\boxed{\frac12} or \boxed{0.5}", "1/2"),
    (r"$\text{Größe} = \boxed{5}$", "5"),  # Latin letters with accents or ß are not mixed
    (r"$\text{Площадь} = \boxed{12}$", "12"),  # nor is a word of another script alone
]

# 2. Prose after a statement may not offer another value, whatever the word or the letters.
PROSE_OFFERS = [
    ("So we get \\boxed{2}; 3 is also possible.", "2"),
    ("\\boxed{2}. 3 also works.", "2"),
    ("\\boxed{2}\n\nAnother solution is 3.", "2"),
    ("\\boxed{2}. x = 3 works too.", "2"),
    ("\\boxed{2}; $x = 3$ is valid as well.", "2"),
    ("\\boxed{5}. 4 is also a solution.", "5"),
    ("\\boxed{5}. Another root is 4.", "5"),
    ("\\boxed{2}, \u043er 3", "2"),  # Cyrillic о
    ("\\boxed{2}, \u03bfr 3", "2"),  # Greek omicron
    ("\\boxed{2}, \u0585r 3", "2"),  # Armenian oh
    ("\\boxed{2}, \u043e\u0433 3", "2"),  # all Cyrillic
    ("\\boxed{2}, \u1d0f\u0280 3", "2"),  # small capitals
    ("\\boxed{2}, \U0001d428\U0001d42b 3", "2"),  # mathematical bold
    ("\\boxed{2}, \uff4f\uff52 3", "2"),  # full width
    ("\\boxed{2}, o\u200br 3", "2"),  # a zero-width space inside
    ("\\boxed{2}, o\u0301r 3", "2"),  # a combining mark
    ("\\boxed{2}, m\u0430ybe 3", "2"),
    ("\\boxed{2}, 3 \u0456s \u0430lso possible", "2"),
    ("\\boxed{2}, o\u0434 3", "2"),  # mixed scripts in one word
    ("\\boxed{2}, or -2", "2"),
    ("\\boxed{2}, or maybe one", "2"),
    ("\\boxed{1}\nAlternatively, one.", "1"),
    ("\\boxed{2}, or maybe part 3 hmm 4", "2"),
    ("The answer is $\\boxed{6}$, or equivalently $\\frac{13}{2}$.", "6"),
    ("The answer is $\\boxed{6}$, or equivalently 6.5", "6"),
    ("\\boxed{5}. Or 2 + 3 = 6.", "5"),
    ("\\boxed{6}, or " + ", or ".join(str(k) for k in range(30)), "6"),
    ("\\boxed{2}" + " or 2" * 2000 + " or 3", "2"),
]
PROSE_FINE = [
    ("\\boxed{5}\nAlternatively, one can check it by substitution.", "5"),
    ("\\boxed{12}\n\nLet me know if you have questions or need help with part 2.", "12"),
    ("\\boxed{12}\n\nLet me know if you need help with part 2.", "12"),
    ("The answer is $\\boxed{6}$, or equivalently $\\frac{12}{2}$.", "6"),
    ("The answer is $\\boxed{6}$, or equivalently 12/2.", "6"),
    ("\\boxed{0.5}, or equivalently 1/2", "1/2"),
    ("\\boxed{-2}, or equivalently -2.0", "-2"),
    ("\\boxed{5}. Note that x = 2 is not a solution.", "5"),
    ("\\boxed{5}. We discard x = -1 since it is extraneous.", "5"),
    ("\\boxed{5}. This is the only possible value; 3 fails.", "5"),
    ("\\boxed{5}. We can also check: 2 + 3 = 5.", "5"),
    ("\\boxed{5}\n\nStep 2 also works out.", "5"),
    ("\\boxed{4}\nOne can also verify this by substitution.", "4"),
    ("\\boxed{7} (see equation (2), or part 3)", "7"),
    ("\\boxed{12}\nEither 12 or 12.0, the same.", "12"),
    ("\\boxed{3}, since x is pοsitive.", "3"),  # a look-alike letter, no value offered
    ("\\boxed{5}\nШаг 2: площадь равна 5.", "5"),
]

# 3. The round-3 hardening's refusals of right answers (all passed at 001e4a7).
REGRESSIONS = [
    ("\\boxed{5}\nAlternatively, one can check it by substitution.", "5"),
    ("\\boxed{12}\nLet me know if you have other questions or need help with part 2.", "12"),
    ("The answer is $\\boxed{6}$, or equivalently $\\frac{12}{2}$.", "6"),
    (r"$\boxed{7} = 3 + 4$", "7"),
    ("\\boxed{" * 22 + "1" + "}" * 22, "1"),
    (TOWER, TOWER),
    (rf"\boxed{{{TOWER}}}", TOWER),
    (r"\boxed{\text{DNE}}", r"\text{DNE}"),
    (r"\boxed{[1,100]}", "[1, 100]"),
]

# 4. A reference in words, or too large to compare: only the same words, or the same writing.
UNREADABLE_REFERENCE_FAILS = [
    (r"\boxed{\text{END}}", r"\text{DNE}"),
    (r"\boxed{0}", r"\text{DNE}"),
    (r"\boxed{\text{DNE}} or maybe \boxed{0}", r"\text{DNE}"),
    (r"\boxed{\text{DNE}}, or maybe 3", r"\text{DNE}"),
    (rf"\boxed{{{TOWER}}}, or maybe 3", TOWER),
    (r"\boxed{e^{e^{e^{e^{11}}}}} \boxed{e^{e^{e^{e^{10}}}}}", TOWER),
]
UNREADABLE_REFERENCE_PASSES = [
    (r"\boxed{\text{dne}}", r"\text{DNE}"),
    ("DNE", r"\text{DNE}"),
    (r"\boxed{\text{No solution}}", r"\text{no solution}"),
    ("e^{ e^{e^{e^{10}}} }", TOWER),
]


@pytest.fixture(scope="module")
def verifier():
    checker = MathVerifier(timeout=TIMEOUT)
    checker.start()
    yield checker
    checker.close()


def timed(verifier: MathVerifier, candidate: str, reference: str):
    verifier.start()  # a timeout replaced the worker: its successor warms up outside the clock
    began = time.monotonic()
    verdict = verifier.verify(candidate, reference)
    assert time.monotonic() - began <= 1.1 * TIMEOUT, (candidate, reference)
    return verdict


@pytest.mark.parametrize("case", CHANGED_MEANING, ids=range(len(CHANGED_MEANING)))
def test_a_box_whose_surrounding_maths_changes_its_meaning_is_not_read_alone(verifier, case):
    verdict = timed(verifier, *case)
    assert verdict.status == "fail", (case, verdict)


@pytest.mark.parametrize("case", MEANING_KEPT, ids=range(len(MEANING_KEPT)))
def test_a_box_beside_words_and_names_that_keep_its_meaning_passes(verifier, case):
    verdict = timed(verifier, *case)
    assert verdict.status == "pass", (case, verdict)


@pytest.mark.parametrize("case", PROSE_OFFERS, ids=range(len(PROSE_OFFERS)))
def test_prose_that_offers_another_value_hedges_in_any_words_and_letters(verifier, case):
    verdict = timed(verifier, *case)
    assert verdict.status == "fail" and "hedges" in verdict.detail, (case, verdict)


@pytest.mark.parametrize("case", PROSE_FINE, ids=range(len(PROSE_FINE)))
def test_prose_without_another_value_passes(verifier, case):
    verdict = timed(verifier, *case)
    assert verdict.status == "pass", (case, verdict)


@pytest.mark.parametrize("case", REGRESSIONS, ids=range(len(REGRESSIONS)))
def test_the_round_three_refusals_of_right_answers_pass_again(verifier, case):
    verdict = timed(verifier, *case)
    assert verdict.status == "pass", (case, verdict)


def test_a_bracket_holds_a_list_not_a_digit_group(verifier):
    assert timed(verifier, r"\boxed{[1,100]}", "1100").status == "fail"
    assert timed(verifier, r"\boxed{(1,100]}", "(1, 100]").status == "pass"
    assert timed(verifier, r"\boxed{[1{,}000, 2{,}000]}", "[1000, 2000]").status == "pass"
    assert timed(verifier, r"\boxed{1,000}", "1000").status == "pass"
    assert join_digit_groups("[1,100]") == "[1,100]"
    assert join_digit_groups("\\{1,000\\} \\cup 2,000") == "\\{1,000\\} \\cup 2000"


@pytest.mark.parametrize(
    "case", UNREADABLE_REFERENCE_FAILS, ids=range(len(UNREADABLE_REFERENCE_FAILS))
)
def test_a_reference_in_words_or_too_large_is_stated_only_as_written(verifier, case):
    verdict = timed(verifier, *case)
    assert verdict.status == "fail", (case, verdict)


@pytest.mark.parametrize(
    "case", UNREADABLE_REFERENCE_PASSES, ids=range(len(UNREADABLE_REFERENCE_PASSES))
)
def test_the_same_words_or_the_same_writing_pass(verifier, case):
    verdict = timed(verifier, *case)
    assert verdict.status == "pass", (case, verdict)


def test_a_tower_written_otherwise_cannot_be_compared_and_is_left_out(verifier):
    verdict = timed(verifier, TOWER + " + 1", TOWER)
    assert verdict.status == "error" and "cannot be read" in verdict.detail, verdict


def test_the_exact_and_numeric_verifiers_read_offers_the_same_way():
    numeric, exact = Numeric(), Exact(extract_answer=True)
    for checker in (numeric, exact):
        verdict = checker.verify("So we get \\boxed{2}; 3 is also possible.", "2")
        assert verdict.status == "fail" and "hedges" in verdict.detail, verdict
        assert checker.verify("\\boxed{2}\nAlternatively, one can check it.", "2").status == (
            "pass"
        )
    assert numeric.verify("\\boxed{6}, or equivalently 6.0", "6").status == "pass"
    assert numeric.verify("\\boxed{6}, \u043er 7", "6").status == "fail"


def test_folding_reads_letters_as_they_look():
    assert fold("\u043er m\u0430ybe o\u200br \U0001d428\U0001d42b") == "or maybe or or"
    assert fold("plain ascii") == "plain ascii"
    assert fold("Площадь Große naïve") == "Площадь Große naive"


@pytest.mark.parametrize(
    "text",
    [
        "\\boxed{2}" + " or 1" * 300_000,
        "\\boxed{2}" + " 3 possible" * 200_000,
        "\\boxed{2}" + " possible." * 200_000,
        "\\boxed{2}" + " \u043er" * 300_000 + " 3",
        "\\boxed{2} " + "a\u043e" * 500_000,
        "\\boxed{2} or" + " part 2" * 200_000,
        "\\boxed{2} or" + " one can" * 200_000,
        "\\boxed{2} or 3" + ")" * 1_000_000,
        "\\boxed{2} or 1" + " + 1" * 300_000,
        "x = 1 or x = \\boxed{1}\n" * 999,
        "$x = \\pm\\boxed{1}$ " * 999,
        "x = -\\boxed{1} or \\boxed{1} " * 499,
    ],
    ids=range(12),
)
def test_reading_offers_and_holders_stays_linear(text):
    began = time.monotonic()
    with contextlib.suppress(ValueError):
        find_statements(text)
    assert time.monotonic() - began < 2.0
