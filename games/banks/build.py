"""Writes the shipped seed banks: ``python -m selfplay.games.banks.build [--out FOLDER]``.

Four topics of short maths problems, 200 each, in ``games/data/<topic>.jsonl``: arithmetic,
linear equations and fractions are training topics, with every fifth problem marked
``held_out`` (never used in training, only to evaluate); percentages is the transfer topic,
all of it marked ``transfer`` (never trained on, to see whether what was learnt carries over).

Every answer is computed with sympy from the numbers drawn, and each record carries a
``check``: the expression (or the two sides of the equation, in ``x``) the answer must
satisfy, written in the math verifier's grammar so a test can re-check it with the verifier's
own safe parser, and a ``solution``: a short worked answer ending with the answer in the
games' ``[answer]`` form (a reference for SPIN's chosen side and STaR's hint). The generator
is seeded: running it again writes the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sympy

from selfplay.games.banks import ALL_TOPICS, TRANSFER_TOPIC

SEED = 20240601
PER_TOPIC = 200
HELD_OUT_EVERY = 5  # every fifth problem of a training topic is held out
DATA = Path(__file__).resolve().parent.parent / "data"

Item = tuple[str, sympy.Rational, dict[str, str]]  # problem text, answer, check


def show(value: sympy.Rational) -> str:
    """``7``, ``-3/4``: the answer as the verifier's grammar reads it."""
    value = sympy.Rational(value)
    return str(value.p) if value.q == 1 else f"{value.p}/{value.q}"


def signed(n: int) -> str:
    return f"+ {n}" if n >= 0 else f"- {-n}"


# ---- arithmetic ---------------------------------------------------------------------------------


def arithmetic(rng: random.Random, level: int) -> Item:
    if level == 1:
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        op = rng.choice("+-")
        expression = f"{a} {op} {b}"
        value = a + b if op == "+" else a - b
        return f"What is {expression}?", sympy.Integer(value), {"expression": expression}
    if level == 2:
        a, b = rng.randint(3, 19), rng.randint(3, 19)
        c = rng.randint(2, a * b - 1)
        expression = f"{a} * {b} - {c}"
        text = (
            f"A box holds {a} pencils. How many pencils are left in {b} boxes "
            f"after {c} are given away?"
        )
        if rng.random() < 0.5:
            text = f"Compute {expression}."
        return text, sympy.Integer(a) * b - c, {"expression": expression}
    d = rng.randint(2, 9)
    q = rng.randint(2, 12)
    a, b, c = rng.randint(2, 30), rng.randint(2, 30), rng.randint(2, 9)
    expression = f"({a} + {b}) * {c} - {d * q} / {d}"
    value = sympy.Integer(a + b) * c - sympy.Rational(d * q, d)
    return f"Compute ({a} + {b}) * {c} - {d * q} / {d}.", value, {"expression": expression}


# ---- linear equations ---------------------------------------------------------------------------


def linear(rng: random.Random, level: int) -> Item:
    x = sympy.Symbol("x")
    solution = rng.randint(-12, 12)
    if level == 1:
        b = rng.randint(-20, 20)
        lhs, rhs = f"x {signed(b)}", str(solution + b)
    elif level == 2:
        a, b = rng.choice([2, 3, 4, 5, 6, 7, -2, -3]), rng.randint(-20, 20)
        lhs, rhs = f"{a}x {signed(b)}", str(a * solution + b)
    else:
        a, c = rng.sample([2, 3, 4, 5, 6, 7, 8, 9], 2)
        b, d = rng.randint(-20, 20), rng.randint(-20, 20)
        lhs, rhs = f"{a}x {signed(b)}", f"{c}x {signed(d)}"
    answers = sympy.solve(sympy.Eq(_linear(lhs, x), _linear(rhs, x)), x)
    (answer,) = answers
    return f"Solve for x: {lhs} = {rhs}.", sympy.Rational(answer), {"lhs": lhs, "rhs": rhs}


def _linear(side: str, x: sympy.Symbol) -> sympy.Expr:
    """``'3x + 5'``, ``'x - 2'`` or ``'7'`` as a sympy expression (our own text, not a model's)."""
    parts = side.replace("- ", "-").replace("+ ", "").split()
    total = sympy.Integer(0)
    for part in parts:
        if part.endswith("x"):
            coefficient = part[:-1]
            total += int(coefficient + "1" if coefficient in ("", "-") else coefficient) * x
        else:
            total += int(part)
    return total


# ---- fractions ----------------------------------------------------------------------------------


def fraction(rng: random.Random) -> tuple[str, sympy.Rational]:
    q = rng.randint(2, 12)
    p = rng.randint(1, q - 1) if rng.random() < 0.8 else rng.randint(q + 1, 2 * q)
    return f"{p}/{q}", sympy.Rational(p, q)


def fractions(rng: random.Random, level: int) -> Item:
    (a, va), (b, vb) = fraction(rng), fraction(rng)
    if level == 1:
        op, value = "+", va + vb
    elif level == 2:
        op = rng.choice("-*")
        value = va - vb if op == "-" else va * vb
    else:
        (c, vc) = fraction(rng)
        expression = f"({a} + {b}) / ({c})"
        text = f"What is ({a} + {b}) divided by {c}? Give a reduced fraction."
        return text, (va + vb) / vc, {"expression": expression}
    expression = f"{a} {op} {b}"
    word = {"+": "plus", "-": "minus", "*": "times"}[op]
    return f"What is {a} {word} {b}? Give a reduced fraction.", value, {"expression": expression}


# ---- percentages (the transfer topic) -----------------------------------------------------------


def percentages(rng: random.Random, level: int) -> Item:
    p = rng.choice([5, 10, 12, 15, 20, 25, 30, 40, 50, 60, 75])
    n = rng.randint(1, 40) * 20
    if level == 1:
        expression = f"{p} / 100 * {n}"
        return f"What is {p}% of {n}?", sympy.Rational(p, 100) * n, {"expression": expression}
    if level == 2:
        expression = f"{n} + {p} / 100 * {n}"
        text = f"A jacket costs {n} dollars. Its price rises by {p}%. What is the new price?"
        return text, n + sympy.Rational(p, 100) * n, {"expression": expression}
    part = sympy.Rational(p, 100) * n
    expression = f"{show(part)} / {n} * 100"
    text = f"{show(part)} is what percent of {n}? Answer with the number of percent."
    return text, part / n * 100, {"expression": expression}


# ---- one-digit sums (a warm-up topic for small models) ------------------------------------------


def sums(rng: random.Random, level: int) -> Item:
    if level == 1:
        terms = [rng.randint(0, 9), rng.randint(0, 9)]
    elif level == 2:
        terms = [rng.randint(0, 9) for _ in range(3)]
    else:
        terms = [rng.randint(10, 99), rng.randint(0, 9)]
    expression = " + ".join(map(str, terms))
    return f"What is {expression}?", sympy.Integer(sum(terms)), {"expression": expression}


MAKERS: dict[str, Callable[[random.Random, int], Item]] = {
    "arithmetic": arithmetic,
    "linear-equations": linear,
    "fractions": fractions,
    "percentages": percentages,
    "sums": sums,
}


def solution_of(check: dict[str, str], answer: str) -> str:
    """The worked answer: the computation with its result, then ``[answer]``."""
    if "expression" in check:
        return f"{check['expression']} = {answer} [{answer}]"
    return f"{check['lhs']} = {check['rhs']} gives x = {answer} [{answer}]"


def split_of(topic: str, index: int) -> str:
    if topic == TRANSFER_TOPIC:
        return "transfer"
    return "held_out" if index % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 else "train"


def build_topic(topic: str, count: int = PER_TOPIC, seed: int = SEED) -> list[dict[str, Any]]:
    """``count`` distinct problems of ``topic``, levels 1-3 in turn, reproducible from ``seed``."""
    rng = random.Random(f"{seed}:{topic}")
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    while len(records) < count:
        index = len(records)
        level = index % 3 + 1
        problem, answer, check = MAKERS[topic](rng, level)
        if problem in seen:
            continue
        seen.add(problem)
        records.append(
            {
                "id": f"{topic}-{index:03d}",
                "topic": topic,
                "level": level,
                "problem": problem,
                "answer": show(answer),
                "check": check,
                "solution": solution_of(check, show(answer)),
                "split": split_of(topic, index),
            }
        )
    return records


def write(out: Path = DATA, count: int = PER_TOPIC, seed: int = SEED) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for topic in ALL_TOPICS:
        path = out / f"{topic}.jsonl"
        lines = [json.dumps(r, sort_keys=True) for r in build_topic(topic, count, seed)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA, help="Folder for the .jsonl files.")
    parser.add_argument("--count", type=int, default=PER_TOPIC, help="Problems per topic.")
    args = parser.parse_args(argv)
    for path in write(args.out, args.count):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
