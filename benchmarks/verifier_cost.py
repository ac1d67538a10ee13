"""What a verification costs: the code sandbox per check, the math verifier's throughput.

Code: ``CodeVerifier.verify`` of a correct and of a wrong three-test program, one after the
other (each a fresh confined child process: namespaces, limits, Landlock, seccomp), timed
from the call to the verdict; median and 95th percentile over ``--code-runs`` checks.

Math: ``MathVerifier.verify`` over a mix of answer pairs (integers, fractions, LaTeX,
expressions that need simplification, sets, intervals, inequalities, percentages, complex
numbers and non-answers), 13 kinds in turn, each pair with its own random numbers so no
check is answered from sympy's cache; one worker, sympy imported; checks per second over
``--math-rounds`` times 13 checks.

    python benchmarks/verifier_cost.py [--code-runs 100] [--math-rounds 20]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from selfplay.verifiers.code_verifier import CodeVerifier
from selfplay.verifiers.math_verifier import MathVerifier

TESTS = "assert add(1, 2) == 3\nassert add(10, 5) == 15\nassert add(-7, 7) == 0"
PROGRAMS = ("def add(a, b):\n    return a + b", "def add(a, b):\n    return a - b")


def math_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` distinct (candidate, reference) pairs, so no check is answered from a cache."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        a, b, k = rng.randint(2, 999), rng.randint(2, 999), rng.randint(2, 9)
        pairs.append(
            [
                (str(a), str(a)),
                (f"The final answer is {a}.", str(a)),
                (rf"\frac{{{a}}}{{{b}}}", f"{a * k}/{b * k}"),
                (rf"\boxed{{{k}\sqrt{{{a}}}}}", f"sqrt({k * k * a})"),
                (f"(x+{a})^2", f"x^2+{2 * a}x+{a * a}"),
                (rf"{a}\,{b:03d}", str(a * 1000 + b)),
                (rf"\{{{a}, {b}\}}", f"{b}, {a}"),
                (rf"(-\infty, {a}]", rf"x \le {a}"),
                (f"{a}%", str(a / 100)),
                (f"{a}+{b}i", f"{b}i+{a}"),
                (f"I cannot solve this.\nSee page {a}", str(a)),
                (f"{a}/{b}", f"{a}/{b + 1}"),
                (f"sin({a})^2 + cos({a})^2", "1"),
            ][i % 13]
        )
    return pairs


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def code_cost(runs: int) -> dict[str, float]:
    verifier = CodeVerifier(allow_code_execution=True, timeout=5.0)
    verifier.verify(PROGRAMS[0], TESTS)  # warm the file cache
    seconds, verdicts = [], []
    for i in range(runs):
        began = time.perf_counter()
        verdicts.append(verifier.verify(PROGRAMS[i % 2], TESTS).status)
        seconds.append(time.perf_counter() - began)
    assert verdicts[:2] == ["pass", "fail"], verdicts[:2]
    return {"median_s": statistics.median(seconds), "p95_s": percentile(seconds, 0.95)}


def math_throughput(rounds: int) -> dict[str, float]:
    verifier = MathVerifier(timeout=10.0)
    verifier.start()
    pairs = math_pairs(rounds * 13)
    try:
        verifier.verify("1", "1")  # the worker has imported sympy
        began = time.perf_counter()
        statuses = [verifier.verify(candidate, reference).status for candidate, reference in pairs]
        elapsed = time.perf_counter() - began
    finally:
        verifier.close()
    expected = ["pass"] * 10 + ["fail", "fail", "pass"]
    assert statuses[:13] == expected, statuses[:13]
    return {"checks": len(pairs), "seconds": elapsed, "checks_per_s": len(pairs) / elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code-runs", type=int, default=100)
    parser.add_argument("--math-rounds", type=int, default=20)
    args = parser.parse_args()
    code = code_cost(args.code_runs)
    print(
        f"code sandbox: {args.code_runs} checks, median {code['median_s'] * 1000:.0f} ms, "
        f"p95 {code['p95_s'] * 1000:.0f} ms per verification"
    )
    maths = math_throughput(args.math_rounds)
    print(
        f"math verifier: {maths['checks']:.0f} checks in {maths['seconds']:.1f} s, "
        f"{maths['checks_per_s']:.0f} checks/s"
    )


if __name__ == "__main__":
    main()
