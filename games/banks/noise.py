"""Noise injection (seed 004): irrelevant but plausible sentences inserted into a problem.

Why: a solver that keys on every number it reads fails a problem as soon as the problem
mentions something beside the point; the seed write-up inserts such information so that the
model learns to find the question and ignore the rest. The sentences here are everyday
statements with a number in them ("A bus leaves the station every 15 minutes."), so they
look like part of a word problem; none names a variable or asks anything, so the answer
stays the same.

`add_noise(problem, rng)` puts one sentence at a sentence boundary before the problem's
last sentence (the question, or the instruction that closes it); `noisy_version` does it
for a match drawn from its seed, on a share of matches, and returns None for the others. The
clean problem is always kept beside the noisy one (the games store both), so evaluation can
read either.
"""

from __future__ import annotations

import random
import re

NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun")
THINGS = ("pencils", "stamps", "marbles", "books", "cards", "shells", "coins", "plants")
TEMPLATES = (
    "{name} has {n} {things} at home.",
    "A bus leaves the station every {n} minutes.",
    "The shop on the corner opens at {h} o'clock.",
    "There are {n} {things} on the shelf next to the window.",
    "It was {n} degrees outside that morning.",
    "{name} walked {n} metres to the library.",
    "The room has {n} chairs and a large table.",
    "A box of {things} weighs {n} grams.",
    "This is question {n} of the worksheet.",
    "{name} read {n} pages of a book yesterday.",
)
# a sentence ends at . ? ! followed by a space; decimals (2.5) and fractions (3/4) stay whole
BOUNDARY = re.compile(r"(?<=[.?!])\s+(?=\S)")


def noise_sentence(rng: random.Random) -> str:
    """One irrelevant sentence with a number in it."""
    template = rng.choice(TEMPLATES)
    name, things = rng.choice(NAMES), rng.choice(THINGS)
    return template.format(name=name, things=things, n=rng.randint(2, 99), h=rng.randint(6, 11))


def add_noise(problem: str, rng: random.Random, sentences: int = 1) -> str:
    """``problem`` with ``sentences`` irrelevant sentences at boundaries before its last one."""
    parts = BOUNDARY.split(problem.strip())
    for _ in range(sentences):
        at = rng.randint(0, len(parts) - 1)  # never after the last sentence
        parts.insert(at, noise_sentence(rng))
    return " ".join(parts)


def noisy_version(problem: str, seed: int, share: float, sentences: int = 1) -> str | None:
    """The noisy problem of the match with ``seed``, drawn on a ``share`` of seeds; else None.

    Its own random stream (named after the seed), so switching noise on changes nothing
    else a match draws.
    """
    if share <= 0:
        return None
    rng = random.Random(f"selfplay-noise-{seed}")
    if rng.random() >= share:
        return None
    return add_noise(problem, rng, sentences)


def task_noise(problem: str, key: int | str, sentences: int = 1) -> str:
    """``problem`` with noise always inserted, the same for the same key (evaluation)."""
    return add_noise(problem, random.Random(f"selfplay-noise-task-{key}"), sentences)
