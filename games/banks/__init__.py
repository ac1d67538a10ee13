"""The seed banks shipped with the package: short maths problems with sympy-checked answers.

``load_bank(topic, split)`` returns the problems of one topic (or ``"all"``) in one split:
``train`` (what games draw seed problems from), ``held_out`` (evaluation only) or
``transfer`` (the whole of a topic never trained on). The files are written by
``python -m selfplay.games.banks.build``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

TRAINING_TOPICS = ("arithmetic", "linear-equations", "fractions")
TRANSFER_TOPIC = "percentages"  # never trained on: the transfer check
TOPICS = (*TRAINING_TOPICS, TRANSFER_TOPIC)
# Easier topics for small models, outside the defaults: one-digit sums (level 1: a + b; 2:
# a + b + c; 3: a two-digit number plus a one-digit one), held out like the training topics.
WARM_UP_TOPICS = ("sums",)
ALL_TOPICS = (*TOPICS, *WARM_UP_TOPICS)
Split = Literal["train", "held_out", "transfer", "all"]
SPLITS = ("train", "held_out", "transfer", "all")

__all__ = [
    "ALL_TOPICS",
    "SPLITS",
    "TOPICS",
    "TRAINING_TOPICS",
    "TRANSFER_TOPIC",
    "WARM_UP_TOPICS",
    "Problem",
    "load_bank",
]


@dataclass(frozen=True, slots=True)
class Problem:
    """One seed problem; ``answer`` is written in the math verifier's grammar (``3/4``)."""

    id: str
    topic: str
    level: int
    problem: str
    answer: str
    split: str
    solution: str = ""  # a short worked answer ending with ``[answer]``


@cache
def _topic(topic: str) -> tuple[Problem, ...]:
    text = resources.files("selfplay.games").joinpath("data", f"{topic}.jsonl").read_text("utf-8")
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    fields = Problem.__slots__
    return tuple(Problem(**{k: r[k] for k in fields if k in r}) for r in records)


def load_bank(topic: str = "all", split: Split = "train") -> list[Problem]:
    """The problems of ``topic`` (a topic name or ``"all"``, the default topics) in ``split``."""
    if topic != "all" and topic not in ALL_TOPICS:
        known = ", ".join(ALL_TOPICS)
        raise ValueError(f"Unknown bank topic {topic!r}; topics are: all, {known}.")
    if split not in SPLITS:
        raise ValueError(f"Unknown bank split {split!r}; splits are: {', '.join(SPLITS)}.")
    topics = TOPICS if topic == "all" else (topic,)
    return [p for t in topics for p in _topic(t) if split in ("all", p.split)]
