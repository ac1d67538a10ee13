"""Opponent samplers: the pool's eviction rule, sampling weights, PSRO's matrix, the Elo band."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import torch

from selfplay.api.ratings import Payoffs
from selfplay.api.sampler import LEARNER, Pool
from selfplay.api.types import Episode
from selfplay.opponents.elo import BandController, EloSampler
from selfplay.opponents.pool import PoolSampler
from selfplay.opponents.psro import PSRO
from selfplay.plugins.manager import registries


def match(a: str, b: str, payoff_a: float) -> Episode:
    return Episode(
        game="g", seed=0, seats={"p0": a, "p1": b}, turns=(),
        outcome={"p0": payoff_a, "p1": -payoff_a},
    )  # fmt: skip


def learn(sampler, episodes) -> None:
    """What the league does: the matches go into its payoff table, then the sampler learns."""
    if sampler.payoff_table is None:
        sampler.payoff_table = Payoffs()
    sampler.payoff_table.record(episodes)
    sampler.update(episodes)


def test_pfsp_draws_the_selves_the_learner_still_loses_to():
    members = ["snapshot:0", "snapshot:5", "snapshot:9"]
    pfsp = PoolSampler(p_latest=0.0, weighting="pfsp")
    assert pfsp.mixture(members) == pytest.approx(dict.fromkeys(members, 1 / 3))  # unplayed
    pfsp.update(
        [match(LEARNER, "snapshot:0", 1.0) for _ in range(9)]  # always beaten
        + [match("snapshot:5", LEARNER, 1.0) for _ in range(9)]  # always loses to it
        + [match(LEARNER, "snapshot:9", 0.0) for _ in range(9)]  # always drawn
        + [match(LEARNER, LEARNER, 1.0), match("snapshot:0", "snapshot:5", 1.0)]  # not counted
    )
    scores = {m: pfsp.learner_score(m) for m in members}
    assert scores == pytest.approx({"snapshot:0": 0.95, "snapshot:5": 0.05, "snapshot:9": 0.5})
    weights = {m: (1 - p) ** 2 for m, p in scores.items()}  # AlphaStar's hard weighting
    total = sum(weights.values())
    assert pfsp.mixture(members) == pytest.approx({m: w / total for m, w in weights.items()})
    rng = random.Random(0)
    drawn = Counter(pfsp.sample(members, rng) for _ in range(4000))  # weights 0.90, 0.25, 0.0025
    assert (
        drawn["snapshot:5"] > 3 * drawn["snapshot:9"]
        and drawn["snapshot:9"] > 20 * drawn["snapshot:0"]
    )
    assert pfsp.metrics()["pfsp/score/snapshot:5"] == pytest.approx(0.05)
    # the record fades: ten quiet iterations leave about a third of its weight
    for _ in range(10):
        pfsp.update([])
    assert 0.05 < pfsp.learner_score("snapshot:5") < 0.2
    again = PoolSampler(p_latest=0.0, weighting="pfsp")
    again.load_state_dict(pfsp.state_dict())
    assert again.mixture(members) == pytest.approx(pfsp.mixture(members))
    assert pfsp.wanted_matches(["snapshot:5"]) == [] and list(pfsp.record) == ["snapshot:5"]
    beaten = PoolSampler(p_latest=0.0, weighting="pfsp", pfsp_power=50.0)
    beaten.update([match(LEARNER, "snapshot:0", 1.0) for _ in range(10**4)])
    assert beaten.mixture(["snapshot:0"]) == {"snapshot:0": 1.0}  # every weight ~0: alike
    with pytest.raises(ValueError, match="pfsp_power"):
        PoolSampler(weighting="pfsp", pfsp_power=0)


def test_pool_keeps_the_starting_policy_and_evicts_the_oldest_other():
    pool = Pool(size=3, scripted=["random"])
    evicted = [pool.add(f"snapshot:{i}") for i in range(5)]
    assert pool.snapshots == ["snapshot:0", "snapshot:3", "snapshot:4"]
    assert evicted == [[], [], [], ["snapshot:1"], ["snapshot:2"]]
    assert pool.members == ["scripted:random", "snapshot:0", "snapshot:3", "snapshot:4"]
    again = Pool(size=3)
    again.load_state_dict(pool.state_dict())
    assert again.snapshots == pool.snapshots
    with pytest.raises(ValueError, match=r"pool\.size"):
        Pool(size=1)


def test_pool_sampler_weights_latest_and_recency():
    members = ["snapshot:0", "snapshot:5", "snapshot:10"]
    rng = random.Random(0)
    never_latest = Counter(PoolSampler(p_latest=0.0).sample(members, rng) for _ in range(3000))
    assert LEARNER not in never_latest and set(never_latest) == set(members)
    recency = PoolSampler(p_latest=0.0, weighting="recency")
    drawn = Counter(recency.sample(members, rng) for _ in range(6000))
    assert drawn["snapshot:10"] > drawn["snapshot:5"] > drawn["snapshot:0"]
    assert recency.mixture(members) == pytest.approx(
        {"snapshot:0": 1 / 6, "snapshot:5": 2 / 6, "snapshot:10": 3 / 6}
    )
    mostly_latest = Counter(PoolSampler(p_latest=0.8).sample(members, rng) for _ in range(3000))
    assert 0.75 < mostly_latest[LEARNER] / 3000 < 0.85
    assert PoolSampler().sample([], rng) == LEARNER
    with pytest.raises(ValueError, match="weighting"):
        PoolSampler(weighting="newest")


def test_psro_fills_the_matrix_and_solves_for_the_meta_strategy():
    # rock-paper-scissors among three members: the Nash meta-strategy is uniform
    members = ["a", "b", "c"]
    psro = PSRO(meta_solver="nash")
    psro.payoff_table = Payoffs()
    assert psro.wanted_matches(members) == [("a", "b"), ("a", "c"), ("b", "c")]
    beats = {("a", "b"), ("b", "c"), ("c", "a")}
    episodes = []
    for x, y in psro.wanted_matches(members):
        won = 1.0 if (x, y) in beats else -1.0
        episodes += [match(x, y, won), match(y, x, -won)]
    learn(psro, episodes)
    assert psro.matrix(members) == [[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]]
    assert psro.mixture(members) == pytest.approx(dict.fromkeys(members, 1 / 3), abs=1e-6)
    assert psro.wanted_matches(members) == []  # every pair evaluated
    assert psro.wanted_matches([*members, "d"]) == [("a", "d"), ("b", "d"), ("c", "d")]


def test_psro_gives_a_dominated_member_no_weight_and_ignores_training_matches():
    psro = PSRO(meta_solver="nash")
    psro.wanted_matches(["weak", "strong"])
    learn(psro, [match("strong", "weak", 1.0), match("weak", "strong", -1.0)])
    learn(psro, [match(LEARNER, "weak", 1.0)] * 5)  # the learner is not a fixed member
    assert psro.mixture(["weak", "strong"]) == pytest.approx({"weak": 0.0, "strong": 1.0})
    assert all(psro.sample(["weak", "strong"], random.Random(i)) == "strong" for i in range(50))
    with pytest.raises(ValueError, match="meta-solver 'best'"):
        PSRO(meta_solver="best")


def test_elo_sampler_keeps_the_learner_inside_the_band():
    elo = EloSampler(low=0.3, high=0.7)
    members = ["snapshot:0", "scripted:random", "scripted:minimax"]
    elo.wanted_matches(members)
    for _ in range(40):  # the learner crushes random and loses to minimax
        elo.update([match(LEARNER, "scripted:random", 1.0), match(LEARNER, "scripted:minimax", -1)])
    assert (
        elo.learner_expects("scripted:random") > 0.7 > 0.3 > elo.learner_expects("scripted:minimax")
    )
    rng = random.Random(0)
    assert {elo.sample(members, rng) for _ in range(50)} == {"snapshot:0"}
    # nobody inside the band: the member nearest to it
    assert elo.sample(["scripted:random", "scripted:minimax"], rng) in {
        min(
            ["scripted:random", "scripted:minimax"],
            key=lambda m: abs(elo.learner_expects(m) - 0.5),
        )
    }
    with pytest.raises(ValueError, match="low < high"):
        EloSampler(low=0.8, high=0.2)


def test_band_controller_moves_difficulty_out_of_the_band_only():
    band = BandController()
    assert band.adjust(10.0, 0.9) == pytest.approx(12.0)
    assert band.adjust(10.0, 0.1) == pytest.approx(8.0)
    assert band.adjust(10.0, 0.5) == 10.0


@pytest.mark.parametrize("name", ["latest", "pool", "psro", "elo"])
def test_every_sampler_state_round_trips_through_a_checkpoint(name, tmp_path):
    factory = registries().opponent_samplers.get(name)
    sampler = factory()
    members = ["snapshot:0", "snapshot:2", "scripted:random"]
    sampler.wanted_matches(members)
    learn(sampler, [match("snapshot:0", "snapshot:2", 1.0), match(LEARNER, "snapshot:2", -1.0)])
    learn(sampler, [match("snapshot:2", "scripted:random", 0.0)])
    torch.save(sampler.state_dict(), tmp_path / "state.pt")
    restored = factory()
    restored.payoff_table = sampler.payoff_table  # the league's table is the league's checkpoint
    restored.load_state_dict(torch.load(tmp_path / "state.pt", weights_only=True))
    assert restored.state_dict() == sampler.state_dict()
    picks = [sampler.sample(members, random.Random(i)) for i in range(20)]
    assert [restored.sample(members, random.Random(i)) for i in range(20)] == picks


def test_pull_reference_moves_the_magnet_part_way_toward_the_policy():
    from selfplay.core.train.update.reference import pull_reference

    policy, magnet = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    with torch.no_grad():
        policy.weight.fill_(1.0)
        magnet.weight.fill_(0.0)
    pull_reference(magnet, policy, 0.25)
    assert torch.allclose(magnet.weight, torch.full((1, 2), 0.25))
    assert torch.equal(policy.weight, torch.ones(1, 2))  # the policy itself is untouched


def test_latest_can_seat_the_learner_playing_greedily_and_only_its_sampled_seat_trains():
    from selfplay.api.policy import Request
    from selfplay.api.sampler import GREEDY_LEARNER
    from selfplay.core.league.seating import Seats, seat_matches
    from selfplay.core.models.tiny import load_tiny_policy
    from selfplay.core.rollout import play
    from selfplay.core.train.samples import episode_samples
    from selfplay.games.tictactoe import TicTacToe
    from selfplay.opponents.basic import Latest

    game, learner = TicTacToe(), load_tiny_policy()
    seats = Seats(learner=learner, game=game)
    plain = [Latest().sample([], random.Random(0)) for _ in range(50)]
    assert set(plain) == {LEARNER}
    mixed = Counter(Latest(greedy=0.25).sample([], random.Random(i)) for i in range(400))
    assert 0.18 < mixed[GREEDY_LEARNER] / 400 < 0.32
    seatings, seeds = seat_matches(game, Latest(greedy=1.0), seats, random.Random(0), 4)
    episodes = play(game, seatings, seeds)
    for episode in episodes:
        assert sorted(episode.seats.values()) == ["tiny", "tiny:greedy"]
    # the greedy seat's moves are the learner's argmax moves for the same prompts
    greedy_turns = [(ep, t) for ep in episodes for t in ep.turns if t.seat == "tiny:greedy"]
    assert greedy_turns
    requests = [
        Request(game, game.reset(0), t.role, t.prompt, random.Random(0)) for _, t in greedy_turns
    ]
    argmax = [c.text for c in learner.act(requests, greedy=True)]
    assert [t.text for _, t in greedy_turns] == argmax
    samples = episode_samples(episodes, [ep.outcome for ep in episodes], learner.name)
    trained = [t for ep in episodes for t in ep.turns if t.seat == "tiny" and t.token_ids]
    assert samples and len(samples) == len(trained)
