"""The shipped seed banks: splits, determinism of the generator, sympy-checked answers."""

from __future__ import annotations

import random
from importlib import resources

import pytest
import sympy

from selfplay.games.banks import (
    ALL_TOPICS,
    TOPICS,
    TRAINING_TOPICS,
    TRANSFER_TOPIC,
    WARM_UP_TOPICS,
    load_bank,
)
from selfplay.games.banks.build import build_topic, write
from selfplay.verifiers.math_parse import parse_answer


def test_every_topic_has_200_problems_and_three_levels():
    for topic in ALL_TOPICS:
        problems = load_bank(topic, "all")
        assert len(problems) == 200
        assert {p.level for p in problems} == {1, 2, 3}
        assert len({p.problem for p in problems}) == 200  # no duplicates


def test_held_out_split_is_disjoint_and_the_transfer_topic_is_never_trained_on():
    for topic in (*TRAINING_TOPICS, *WARM_UP_TOPICS):
        train, held = load_bank(topic, "train"), load_bank(topic, "held_out")
        assert len(held) == 40 and len(train) == 160
        assert not {p.id for p in train} & {p.id for p in held}
    assert load_bank(TRANSFER_TOPIC, "train") == []
    assert len(load_bank(TRANSFER_TOPIC, "transfer")) == 200
    assert all(p.topic != TRANSFER_TOPIC for p in load_bank("all", "train"))
    assert {p.topic for p in load_bank("all", "all")} == set(TOPICS)  # warm-ups are extra


def test_the_generator_is_deterministic_and_matches_the_shipped_files(tmp_path):
    assert build_topic("fractions", 30, seed=5) == build_topic("fractions", 30, seed=5)
    assert build_topic("fractions", 30, seed=5) != build_topic("fractions", 30, seed=6)
    for path in write(tmp_path):
        shipped = resources.files("selfplay.games").joinpath("data", path.name).read_bytes()
        assert path.read_bytes() == shipped, f"{path.name} differs: rerun the generator"


@pytest.mark.parametrize("topic", ALL_TOPICS)
def test_answers_satisfy_their_check_with_sympy(topic):
    records = build_topic(topic)
    sample = random.Random(0).sample(records, 60)
    for record in sample:
        answer, check = parse_answer(record["answer"]), record["check"]
        assert answer.is_Rational, record
        if "expression" in check:
            assert parse_answer(check["expression"]) == answer, record
        else:
            x = sympy.Symbol("x")
            lhs, rhs = parse_answer(check["lhs"]), parse_answer(check["rhs"])
            assert sympy.simplify((lhs - rhs).subs(x, answer)) == 0, record
            assert sympy.simplify((lhs - rhs).subs(x, answer + 1)) != 0, record


def test_bad_topic_or_split_names_the_choices():
    with pytest.raises(ValueError, match="topics are: all, arithmetic"):
        load_bank("algebra")
    with pytest.raises(ValueError, match="splits are"):
        load_bank("arithmetic", "test")
