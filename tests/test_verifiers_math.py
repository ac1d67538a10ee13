"""The math verifier: injection payloads, pathological inputs, equivalence traps, fuzzing,
non-answers that must never pass, and the forms of a right answer that must."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfplay.api.verifier import STATUSES
from selfplay.verifiers.math_verifier import MathVerifier

TIMEOUT = 2.0
RIGHT, WRONG, REFERENCE = "355/113", "22/7", r"\frac{355}{113}"

# Each payload tries to create the file MARKER; none may, and none may pass.
PAYLOADS = [
    "__import__('os').system('touch MARKER')",
    "().__class__.__bases__[0].__subclasses__()",
    "(lambda: __import__('os').system('touch MARKER'))()",
    "os.system('touch MARKER')",
    "eval(\"__import__('os').system('touch MARKER')\")",
    "exec(\"open('MARKER','w')\")",
    "open('MARKER','w').write('x')",
    "x.__class__",
    r"\boxed{__import__('os').system('touch MARKER')}",
    r"\boxed{\text{__import__}('os').system('touch MARKER')}",
    "answer: __import__('subprocess').call(['touch','MARKER'])",
    "[c for c in ().__class__.__base__.__subclasses__() if c.__name__=='Popen'][0]"
    "(['touch','MARKER'])",
    "getattr(__builtins__,'exec')(\"open('MARKER','w')\")",
    "sympify(\"__import__('os').system('touch MARKER')\")",
    "Symbol('x').__class__.__init__.__globals__['os'].system('touch MARKER')",
    r"\input{MARKER}",
    r"\immediate\write18{touch MARKER}",
    r"\def\x{touch MARKER} \x",
    r"$\boxed{\frac{1}{__import__('os').system('touch MARKER')}}$",
    "1 + __import__('os').system('touch MARKER')",
    "sin.__globals__['__builtins__']['exec'](\"open('MARKER','w')\")",
    r"\sqrt{exec('open(\'MARKER\',\'w\')')}",
    "breakpoint()",
    "import os; os.system('touch MARKER')",
    "lambda x: open('MARKER','w')",
    "f\"{__import__('os').system('touch MARKER')}\"",
    "Function('f')(x) + open('MARKER','w').close()",
    "\x00\x1b[2J touch MARKER",
    "'; import os; os.system('touch MARKER'); '",
    r"\mathrm{os}.system('touch MARKER')",
    r"\operatorname{exec}(\text{open('MARKER','w')})",
    "\uff3f\uff3fimport\uff3f\uff3f('os').system('touch MARKER')",
    'S(\'__import__("os").system("touch MARKER")\')',
    "Integer.__new__.__globals__['os'].system('touch MARKER')",
    r"\boxed{1}}; __import__('os').system('touch MARKER'); {",
    "x**__import__('os').system('touch MARKER')",
    "compile('open(\"MARKER\",\"w\")','','exec')",
    "Answer: {{ cycler.__init__.__globals__.os.popen('touch MARKER') }}",
]

PATHOLOGICAL = [
    "9^9^9^9",
    "2^2^2^2^2^2",
    "10^10^10",
    "(10^100000)^(10^100000)",
    "2**99999 * 3**99999 * 5**99999 * 7**99999",
    "(" * 10_000 + "1" + ")" * 10_000,
    "(" * 150 + "1" + ")" * 150,
    "-" * 399 + "1",
    "1+" * 500_000 + "1",
    "9" * 1_000_000,
    "x" * 1_000_000,
    r"\frac{" * 5000 + "1" + "}{2}" * 5000,
    "100000!",
    "(10^5)!",
    "5000!/4999!",
    "(x+1)^100000",
    "sin(10^100000)",
    "2^(3^(1/2)*10^9)",
    "1e999999999",
]

EQUIVALENCES = [
    ("2/4", "1/2", True),
    ("sqrt(8)", "2*sqrt(2)", True),
    ("x+1", "1+x", True),
    ("0.1+0.2", "0.3", True),
    ("0.5", r"\frac{1}{2}", True),
    ("(x+1)^2", "x^2+2x+1", True),
    (r"\sin(\pi/6)", "1/2", True),
    (r"\boxed{3\sqrt{2}}", "sqrt(18)", True),
    ("1,000", "1000", True),
    ("cos(pi/5)", "(1+sqrt(5))/4", True),
    (r"\dfrac{3}{4}", "0.75", True),
    ("1e-3", "1/1000", True),
    ("x = 5.", "5", True),
    ("-0", "0", True),
    ("The final answer is 42.", "42", True),
    ("5!/3!", "20", True),
    (r"\sqrt[3]{27}", "3", True),
    ("log(e^2)", "2", True),
    ("1/2004!", "1/2006!", False),
    ("10^-30", "0", False),
    ("1/3", "0.333", False),
    ("3.14159", "pi", False),
    ("22/7", "pi", False),
    ("x", "y", False),
    ("2^1000", "2^1000+1", False),
    ("0.1+0.2", "0.30000000000000004", False),
    ("sqrt(2)", "1.414213562373095", False),
    ("sqrt(2)*10^-40", "0", False),
    ("2x", "x^2", False),
    ("-1/2", "1/2", False),
]


@pytest.fixture(scope="module")
def verifier():
    checker = MathVerifier(timeout=TIMEOUT)
    checker.start()
    yield checker
    checker.close()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_injection_has_no_effect_and_never_passes(verifier, payload, tmp_path):
    marker = tmp_path / "marker"
    text = payload.replace("MARKER", str(marker))
    assert verifier.verify(text, REFERENCE).status in ("fail", "error")
    assert verifier.verify(RIGHT, text).status in ("fail", "error")  # as a reference too
    assert not marker.exists()
    assert verifier.verify(WRONG, REFERENCE).status == "fail"
    assert verifier.verify(RIGHT, REFERENCE).status == "pass"


def test_there_are_at_least_thirty_payloads():
    assert len(PAYLOADS) >= 30


@pytest.mark.parametrize("text", PATHOLOGICAL, ids=range(len(PATHOLOGICAL)))
def test_pathological_input_finishes_within_timeout(verifier, text):
    verifier.start()  # a previous timeout replaced the worker; let its successor warm up
    began = time.monotonic()
    verdict = verifier.verify(text, "7")
    assert time.monotonic() - began < TIMEOUT + 1.0
    assert verdict.status in ("fail", "timeout")


@pytest.mark.parametrize("candidate,reference,equal", EQUIVALENCES)
def test_equivalence(verifier, candidate, reference, equal):
    verdict = verifier.verify(candidate, reference)
    assert verdict.status == ("pass" if equal else "fail"), verdict.detail


def test_tolerance_applies_only_to_a_decimal_the_reference_states(verifier):
    loose = MathVerifier(timeout=TIMEOUT, tolerance=1e-4)
    try:
        assert loose.verify("pi", "3.14159").status == "pass"
        assert loose.verify("3.1416", "3.14159").status == "pass"
        assert loose.verify("pi", "3.15").status == "fail"
        assert loose.verify("3.14159", "pi").status == "fail"  # an exact reference: no tolerance
        assert loose.verify(r"\pi + 10^{-6}", r"\pi").status == "fail"
    finally:
        loose.close()
    assert verifier.verify("3.14159", "pi").status == "fail"
    assert verifier.verify("pi", "3.14159").status == "fail"


def test_unreadable_reference_is_an_error_not_a_fail(verifier):
    verdict = verifier.verify("1", "import os")
    assert verdict.status == "error" and verdict.score is None


def test_a_dead_worker_is_an_error_and_the_next_check_works(verifier):
    verifier.worker._process.kill()
    verifier.worker._process.wait()
    assert verifier.verify(RIGHT, REFERENCE).status in ("pass", "error")
    assert verifier.verify(RIGHT, REFERENCE).status == "pass"


def test_a_timeout_replaces_the_worker(verifier):
    slow = verifier.verify("(x+1)^{99999}(x-1)^{99999}", "(x^2-1)^{99999}")  # exact at 8 points
    assert slow.status == "timeout"
    assert verifier.verify(RIGHT, REFERENCE).status == "pass"


MATH_TEXT = st.text(alphabet=st.sampled_from(list("0123456789+-*/^()!{}[]. xe\\pisqrtfacboxed=,")))


@settings(max_examples=100, deadline=None)
@given(candidate=st.one_of(MATH_TEXT, st.text(max_size=200)), reference=MATH_TEXT)
def test_fuzz_no_exception_escapes(verifier, candidate, reference):
    verdict = verifier.verify(candidate, reference)
    assert verdict.status in STATUSES


def expressions(depth: int = 3) -> st.SearchStrategy[str]:
    leaf = st.one_of(st.integers(0, 99).map(str), st.sampled_from(["x", "y", "pi", "2.5"]))
    if depth == 0:
        return leaf
    inner = expressions(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(" ".join),
        st.tuples(inner, st.integers(0, 3)).map(lambda pair: f"({pair[0]})^{pair[1]}"),
        inner.map(lambda text: f"sqrt({text})"),
    )


@settings(max_examples=100, deadline=None)
@given(expression=expressions())
def test_fuzz_every_grammatical_answer_equals_itself(verifier, expression):
    assert verifier.verify(rf"\boxed{{{expression}}}", expression).status == "pass"


# ---- the extraction rule: only an explicit answer span counts ---------------------------------

# (text, reference): none of these states the reference as its answer, so none may pass.
NON_ANSWERS = [
    ("I cannot solve this.\nSee page 1", "1"),
    ("The results are in /home/user1/run1/metrics.csv", "1"),
    ("see /tmp/1/x", "1"),
    ("Saved to runs/1/out.txt\nDone.", "1"),
    ("Step 1: read the problem.\nStep 2: think about it.", "2"),
    ("There are 3 cases and I am not sure which one holds.", "3"),
    ("I think it is 42\nbut maybe 41", "41"),
    ("The answer is not 1", "1"),
    ("answer: 1 or 2", "1"),
    ("answer: probably 7, I am unsure", "7"),
    ("1==1", "1"),
    ("1=1", "1"),
    ("x = 1 = 1", "1"),
    ("1 2", "12"),
    ("1 2", "2"),
    (r"\boxed{}", "0"),
    (r"\boxed{1} was my first guess", "2"),
    ("", "0"),
    ("Answer:", "1"),
    ("x", "1"),
    ("page 7 of 10", "10"),
    ("-\\infty", "\\infty"),
    ("1 < x < 2", "(1, 2)"),  # an interval is asked for: restating the inequality is refused
    ("(1, 2)", "[1, 2]"),
    ("[1, 2)", "[1, 2]"),
    ("(1, 2)", r"\{1, 2\}"),
    ("(2, 1)", "(1, 2)"),
    (r"\{1, 2, 3\}", r"\{1, 2\}"),
    ("x < 3", "x <= 3"),
    ("x > 3", "x < 3"),
    ("-2x < -6", "x < 3"),
    ("y = 2x", "y = 3x"),
    ("3+4i", "3-4i"),
    ("50%", "5"),
    (r"\binom{5}{2}", "20"),
    (r"\frac{1}{3}", "0.33"),
]

# (candidate, reference): the same answer written two ways; each must pass in both roles.
ACCEPTED_FORMS = [
    (r"\frac12", "1/2"),
    (r"\frac{1}{2}", "0.5"),
    (r"\dfrac{1}{2}", r"\tfrac12"),
    (r"1\,000", "1000"),
    (r"1{,}000", "1000"),
    ("1,000,000", "10^6"),
    (r"\text{3}", "3"),
    (r"\mathrm{5}", "5"),
    (r"\binom{5}{2}", "10"),
    (r"\binom{n}{k}", r"\dbinom{n}{k}"),
    ("i^2", "-1"),
    ("3+4i", "4i+3"),
    (r"\sqrt{-4}", "2i"),
    ("(1, 2)", r"\left(1,2\right)"),
    ("(1, -2, 3)", "(1,-2,3)"),
    (r"\{1, 2\}", r"\{2, 1\}"),
    ("{3, 1, 2}", r"\{1, 2, 3\}"),
    ("2, -3", "-3, 2"),
    ("x = 2, x = -3", r"\{-3, 2\}"),
    (r"\{5\}", "5"),
    ("[1, 2]", r"\left[1, 2\right]"),
    ("(0, 1]", r"\left(0, 1\right]"),
    (r"[-1, \infty)", r"[-1, \infty)"),
    (r"(-\infty, 1) \cup (2, \infty)", r"(2, \infty) \cup (-\infty, 1)"),
    ("(1, 2)", r"\left(1, 2\right)"),
    ("x < 3", "3 > x"),
    (r"x \le 3", "x <= 3"),
    (r"1 \le x < 2", "2 > x >= 1"),
    ("2x < 6", "x < 3"),
    ("x^2 + y^2 = 1", "2x^2 + 2y^2 = 2"),
    (r"\infty", "oo"),
    ("50%", r"50\%"),
    ("50 percent", "50%"),
    (r"\sqrt{2}", "sqrt(2)"),
    (r"\sqrt2", "2^(1/2)"),
    (r"\sqrt[3]{8}", "2"),
    ("2^{10}", "1024"),
    ("x^2", "x*x"),
    (r"2\frac{1}{2}", "5/2"),
    (r"\frac{1}{2} + \sqrt{3}", "sqrt(3) + 0.5"),
    (r"\pi", "π"),
    ("−3", "-3"),
    ("5 cm", "5"),
    ("10 dollars", "10"),
    ("x = 5", "5"),
    (r"$\frac{3}{4}$", "0.75"),
    ("|−3|", "3"),
    (r"\boxed{3\sqrt{2}}", "sqrt(18)"),
]

# (candidate, reference): accepted in this direction only (see math_equivalence).
ONE_WAY = [
    ("(1, 2)", "1 < x < 2"),
    (r"(-\infty, 3]", r"x \le 3"),
    (r"[3, \infty)", "x >= 3"),
    ("50%", "0.5"),
    ("50%", "50"),
    ("0.75", r"75\%"),
    ("75", r"75\%"),
]


@pytest.mark.parametrize("text,reference", NON_ANSWERS, ids=range(len(NON_ANSWERS)))
def test_non_answers_never_pass(verifier, text, reference):
    assert verifier.verify(reference, reference).status == "pass"  # the reference is sound
    verdict = verifier.verify(text, reference)
    assert verdict.status == "fail", verdict


@pytest.mark.parametrize("one,other", ACCEPTED_FORMS, ids=range(len(ACCEPTED_FORMS)))
def test_accepted_forms_pass_as_answer_and_as_reference(verifier, one, other):
    assert verifier.verify(one, other).status == "pass", (one, other)
    assert verifier.verify(other, one).status == "pass", (other, one)
    assert verifier.verify(rf"The final answer is $\boxed{{{one}}}$.", other).status == "pass"


@pytest.mark.parametrize("candidate,reference", ONE_WAY, ids=range(len(ONE_WAY)))
def test_one_way_forms(verifier, candidate, reference):
    assert verifier.verify(candidate, reference).status == "pass"


def test_the_answer_span_rule(verifier):
    bracket = r"\[([^\[\]\n]{1,40})\]"
    assert verifier.verify("so I answer [7] now", "7", answer_pattern=bracket).status == "pass"
    assert verifier.verify("so I answer [7] now", "7").status == "fail"
    boxed_then_span = r"\boxed{7} and then [7]"  # the game's span is the answer; the box agrees
    assert verifier.verify(boxed_then_span, "7", answer_pattern=bracket).status == "pass"
    assert verifier.verify(boxed_then_span, "7").status == "pass"
    hedged = verifier.verify(r"\boxed{3} and then [7]", "7", answer_pattern=bracket)
    assert hedged.status == "fail" and "different final answers" in hedged.detail
    assert verifier.verify("[3] and then [7]", "7", answer_pattern=bracket).status == "pass"
    long_work = "Let me work.\n" * 5 + "So the final answer is 12."
    assert verifier.verify(long_work, "12").status == "pass"
    assert verifier.verify(long_work.replace("So the final answer is", "I got"), "12").status == (
        "fail"
    )
    assert verifier.verify("Answer: 5\nthen more prose 6", "5").status == "pass"
    assert verifier.verify("42\n", "42").status == "pass"
