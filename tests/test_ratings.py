"""Elo and Bradley-Terry recover known strengths from synthetic results."""

from __future__ import annotations

import csv
import json
import random

import pytest

from selfplay.api.ratings import RatingRow, Ratings, expected_score, score_of

TRUE_ELO = {"weak": 700.0, "fair": 950.0, "good": 1100.0, "best": 1400.0}


def play_round_robin(ratings: Ratings, matches: int, seed: int = 0, draws: float = 0.0) -> None:
    """Matches between random pairs, each won with the probability the true ratings give."""
    rng = random.Random(seed)
    names = sorted(TRUE_ELO)
    for _ in range(matches):
        a, b = rng.sample(names, 2)
        if rng.random() < draws:
            ratings.record(a, b, 0.5)
            continue
        won = rng.random() < expected_score(TRUE_ELO[a], TRUE_ELO[b])
        ratings.record(a, b, 1.0 if won else 0.0)


def centred(ratings: dict[str, float]) -> dict[str, float]:
    mean = sum(ratings.values()) / len(ratings)
    return {name: value - mean for name, value in ratings.items()}


def test_expected_score():
    assert expected_score(1000, 1000) == 0.5
    assert expected_score(1400, 1000) == pytest.approx(10 / 11)
    assert expected_score(1000, 1400) + expected_score(1400, 1000) == pytest.approx(1.0)


def test_elo_update_moves_by_k_times_the_surprise():
    ratings = Ratings(k=32)
    ratings.record("a", "b", 1.0)
    assert ratings.rating("a") == 1016.0
    assert ratings.rating("b") == 984.0
    ratings.record("a", "b", 0.5)
    assert ratings.rating("a") == pytest.approx(1016 + 32 * (0.5 - expected_score(1016, 984)))


def test_elo_and_bradley_terry_recover_the_true_order_and_gaps():
    ratings = Ratings(k=8)
    play_round_robin(ratings, matches=4000)
    truth = centred(TRUE_ELO)
    order = sorted(TRUE_ELO, key=TRUE_ELO.get)
    assert sorted(ratings.elo, key=ratings.elo.get) == order
    fitted = ratings.bradley_terry()
    assert sorted(fitted, key=fitted.get) == order
    for name, value in centred(fitted).items():
        assert value == pytest.approx(truth[name], abs=40)
    for name, value in centred(ratings.elo).items():
        assert value == pytest.approx(truth[name], abs=80)


def test_bradley_terry_ignores_match_order_and_keeps_unbeaten_players_finite():
    forward, backward = Ratings(), Ratings()
    results = [("a", "b", 1.0)] * 5 + [("b", "c", 1.0)] * 5
    for a, b, score in results:
        forward.record(a, b, score)
    for a, b, score in reversed(results):
        backward.record(a, b, score)
    assert forward.elo != backward.elo
    assert forward.bradley_terry() == pytest.approx(backward.bradley_terry())
    fitted = forward.bradley_terry()
    assert fitted["a"] > fitted["b"] > fitted["c"]
    assert fitted["a"] - fitted["c"] < 2000
    assert sum(fitted.values()) / 3 == pytest.approx(1000.0)


def test_table_counts_results_and_writes_csv(tmp_path):
    ratings = Ratings()
    ratings.record("a", "b", 1.0)
    ratings.record("b", "a", 1.0)
    ratings.record("a", "c", 0.5)
    ratings.record("c", "b", 0.0)
    rows = {row.name: row for row in ratings.table()}
    assert (rows["a"].games, rows["a"].wins, rows["a"].draws, rows["a"].losses) == (3, 1, 1, 1)
    assert (rows["b"].games, rows["b"].wins, rows["b"].draws, rows["b"].losses) == (3, 2, 0, 1)
    assert (rows["c"].games, rows["c"].wins, rows["c"].draws, rows["c"].losses) == (2, 0, 1, 1)
    assert [row.elo for row in ratings.table()] == sorted(ratings.elo.values(), reverse=True)
    ratings.write_csv(tmp_path / "ratings.csv")
    with (tmp_path / "ratings.csv").open() as handle:
        lines = list(csv.DictReader(handle))
    assert list(lines[0]) == list(RatingRow.__dataclass_fields__)
    assert {line["name"]: int(line["wins"]) for line in lines} == {"a": 1, "b": 2, "c": 0}


def test_state_round_trips_through_json_exactly():
    ratings = Ratings(k=12, initial=1500, prior_games=2)
    play_round_robin(ratings, matches=200, seed=3, draws=0.2)
    ratings.add("newcomer")
    restored = Ratings()
    restored.load_state_dict(json.loads(json.dumps(ratings.state_dict())))
    assert restored.state_dict() == ratings.state_dict()
    assert restored.table() == ratings.table()
    ratings.record("weak", "best", 1.0)
    restored.record("weak", "best", 1.0)
    assert restored.elo == ratings.elo


def test_payoffs_become_scores():
    assert [score_of(p) for p in (2.0, 0.0, -1.5)] == [1.0, 0.5, 0.0]


def test_bad_input_is_named():
    ratings = Ratings()
    with pytest.raises(ValueError, match=r"got 2\.0; turn payoffs into scores"):
        ratings.record("a", "b", 2.0)
    with pytest.raises(ValueError, match="against itself"):
        ratings.record("a", "a", 1.0)
    with pytest.raises(ValueError, match="must be positive"):
        Ratings(k=0)
