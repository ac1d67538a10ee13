"""Composing rewards: the --reward grammar, weights, role suffixes, sum vs normalize, metrics."""

from __future__ import annotations

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.reward import EpisodeScores, Reward, RewardError
from selfplay.api.types import Episode, Message, Turn
from selfplay.core.plan.build import build_reward
from selfplay.core.plan.config_loader import build_config
from selfplay.core.reward_pipeline import Component, RewardPipeline, Term, parse_terms
from selfplay.core.train.samples import episode_samples
from selfplay.games.tictactoe import TicTacToe
from selfplay.plugins.registry import UnknownName

ROLES = ("player_0", "player_1")


def turn(role, text="[1]", valid=True, tokens=(7,)):
    action = text.strip("[]") if valid else None
    return Turn(role, "learner", (Message("user", "move?"),), text, action, valid, None, tokens)


def episode(outcome, turns=None, seed=0):
    turns = turns or (turn("player_0"), turn("player_1"))
    seats = dict.fromkeys(ROLES, "learner")
    return Episode("tictactoe", seed, seats, tuple(turns), dict(outcome))


class Fixed(Reward):
    """Role scores given per episode, for tests."""

    name = "fixed"

    def __init__(self, scores, per_turn=False):
        super().__init__()
        self.scores, self.per_turn = scores, per_turn

    def __call__(self, episodes):
        return [dict(s) if isinstance(s, dict) else list(s) for s in self.scores]


def pipeline(*parts, mode="sum"):
    components = [
        Component(Term(name, weight, role), reward) for name, weight, role, reward in parts
    ]
    return RewardPipeline(components, ROLES, mode)


# ---- grammar ----------------------------------------------------------------------------


def test_grammar_reads_names_weights_and_roles():
    terms = parse_terms(" outcome=1.0 + format=0.1+quality@player_1=-0.5 + judge")
    assert terms == [
        Term("outcome", 1.0),
        Term("format", 0.1),
        Term("quality", -0.5, "player_1"),
        Term("judge", 1.0),
    ]
    assert [t.label for t in terms] == ["outcome", "format", "quality@player_1", "judge"]


def test_yaml_list_and_mapping_forms_give_the_same_terms():
    as_list = parse_terms(
        ["outcome", {"name": "quality", "role": "player_1", "weight": 0.5, "options": {"a": 1}}]
    )
    assert as_list == [Term("outcome"), Term("quality", 0.5, "player_1", {"a": 1})]
    assert parse_terms({"outcome": 1, "format@player_0": 0.1}) == [
        Term("outcome", 1.0),
        Term("format", 0.1, "player_0"),
    ]


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("outcome++format", "empty term"),
        ("outcome=x", "weight 'x' is not a number"),
        ("outcome=nan", "weight 'nan' is not a number"),
        ("Outcome", "'Outcome' is not a reward name"),
        ("out come", "'out come' is not a reward name"),
        ("quality@=0.5", "no role after '@'"),
        ("outcome+outcome=2", "appears twice"),
        ("", "empty term"),
    ],
)
def test_bad_expressions_name_the_bad_token_and_show_the_grammar(spec, needle):
    with pytest.raises(RewardError) as err:
        parse_terms(spec)
    assert needle in str(err.value)
    if needle != "appears twice":
        assert "NAME[@ROLE][=WEIGHT]" in str(err.value)


def test_bad_yaml_items_name_the_key():
    with pytest.raises(RewardError, match="unknown key 'wieght'"):
        parse_terms([{"name": "outcome", "wieght": 2}])
    with pytest.raises(RewardError, match="weight True is not a number"):
        parse_terms({"outcome": True})


# ---- building from a config -------------------------------------------------------------


def test_unknown_reward_lists_the_registered_ones():
    config = build_config(flags={"reward": "outcome+formt=0.1"})
    with pytest.raises(UnknownName) as err:
        build_reward(config, TicTacToe())
    message = str(err.value)
    assert "Unknown reward 'formt'" in message and "Did you mean 'format'" in message
    assert "outcome" in message and "novelty" in message


def test_a_role_the_game_lacks_is_named_with_the_game_roles():
    config = build_config(flags={"reward": "outcome+quality@challenger=0.5"})
    with pytest.raises(ConfigError) as err:
        build_reward(config, TicTacToe())
    assert "tictactoe has no role 'challenger'" in str(err.value)
    assert "player_0, player_1" in str(err.value) and "NAME[@ROLE][=WEIGHT]" in str(err.value)


def test_bad_reward_options_name_the_option_and_the_valid_ones():
    config = build_config(flags={"reward": "length"}, overrides=["reward_options.length.fre=3"])
    with pytest.raises(ConfigError, match=r"reward 'length' has no option 'fre'.*free"):
        build_reward(config, TicTacToe())
    config = build_config(flags={"reward": "outcome"}, overrides=["reward_options.length.free=3"])
    with pytest.raises(ConfigError, match="reward_options has 'length'"):
        build_reward(config, TicTacToe())


def test_yaml_config_accepts_the_list_form_with_options(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        "reward:\n  - outcome\n  - {name: length, weight: 0.2, options: {unit: chars, per: 4}}\n"
        "reward_mode: normalize\n"
    )
    rewards = build_reward(build_config(path), TicTacToe())
    assert [c.term.label for c in rewards.components] == ["outcome", "length"]
    assert rewards.components[1].reward.options.per == 4 and rewards.mode == "normalize"


# ---- combining --------------------------------------------------------------------------


def test_weighted_sum_of_role_and_turn_scores():
    eps = [episode({"player_0": 1.0, "player_1": -1.0})]
    rewards = pipeline(
        ("a", 1.0, None, Fixed([{"player_0": 1.0, "player_1": -1.0}])),
        ("b", 0.5, None, Fixed([{"player_0": 2.0, "player_1": None}])),
        ("t", 0.1, None, Fixed([[-1.0, None]], per_turn=True)),
    )
    (scores,) = rewards(eps)
    assert scores.roles == {"player_0": 2.0, "player_1": -1.0}
    assert scores.turns == pytest.approx((-0.1, None))
    assert scores.totals(eps[0]) == pytest.approx({"player_0": 1.9, "player_1": -1.0})


def test_none_stays_none_when_no_component_applies_and_is_left_out_of_means():
    eps = [episode({"player_0": 1.0, "player_1": -1.0}, seed=s) for s in range(2)]
    rewards = pipeline(("a", 1.0, None, Fixed([{"player_0": 3.0}, {"player_0": None}])))
    first, second = rewards(eps)
    assert first.roles == {"player_0": 3.0, "player_1": None}
    assert second.roles == {"player_0": None, "player_1": None}
    assert rewards.metrics() == {"reward/a/player_0": 3.0}  # one value, not (3 + 0) / 2


def test_role_suffix_keeps_a_reward_to_its_role():
    eps = [episode({"player_0": 1.0, "player_1": -1.0})]
    rewards = pipeline(
        ("a", 1.0, "player_1", Fixed([{"player_0": 5.0, "player_1": 2.0}])),
        ("t", 1.0, "player_0", Fixed([[1.0, 1.0]], per_turn=True)),
    )
    (scores,) = rewards(eps)
    assert scores.roles == {"player_0": None, "player_1": 2.0}
    assert scores.turns == (1.0, None)
    assert rewards.metrics() == {
        "reward/a@player_1/player_1": 2.0,
        "reward/t@player_0/player_0": 1.0,
    }
    assert rewards.components[0].reward.role == "player_1"


def test_weight_zero_is_a_pure_metric():
    eps = [episode({"player_0": 1.0, "player_1": -1.0})]
    rewards = pipeline(
        ("a", 1.0, None, Fixed([{"player_0": 1.0, "player_1": None}])),
        ("m", 0.0, None, Fixed([{"player_0": 7.0, "player_1": 4.0}])),
    )
    (scores,) = rewards(eps)
    assert scores.roles == {"player_0": 1.0, "player_1": None}  # never a 0 from the metric
    assert rewards.metrics()["reward/m/player_1"] == 4.0


def test_normalize_keeps_distinctions_that_summing_erases():
    # Two components on different scales: summing lets the large one decide the order;
    # normalising per component keeps the small one's distinction as large as the big one's.
    eps = [episode({"player_0": 0.0, "player_1": 0.0}, seed=s) for s in range(4)]
    big = [{"player_0": v} for v in (0.0, 0.0, 10.0, 10.0)]
    small = [{"player_0": v} for v in (0.0, 1.0, 0.0, 1.0)]
    parts = [("big", 1.0, None, Fixed(big)), ("small", 1.0, None, Fixed(small))]
    summed = [s.roles["player_0"] for s in pipeline(*parts)(eps)]
    normed = [s.roles["player_0"] for s in pipeline(*parts, mode="normalize")(eps)]
    assert summed == [0.0, 1.0, 10.0, 11.0]
    assert normed == pytest.approx([-2.0, 0.0, 0.0, 2.0], abs=1e-4)
    assert sum(normed) == pytest.approx(0.0, abs=1e-6)


def test_normalize_groups_by_role_and_uses_every_process():
    eps = [episode({"player_0": 0.0, "player_1": 0.0}, seed=s) for s in range(2)]
    scores = [{"player_0": 1.0, "player_1": 100.0}, {"player_0": 3.0, "player_1": 100.0}]
    rewards = pipeline(("a", 2.0, None, Fixed(scores)), mode="normalize")
    out = rewards(eps)
    assert [s.roles["player_0"] for s in out] == pytest.approx([-2.0, 2.0], abs=1e-4)
    assert [s.roles["player_1"] for s in out] == [0.0, 0.0]  # no spread within the group

    def other_process_too(t):  # another process holds the same batch: same z, doubled counts
        return t * 2

    twice = rewards(eps, reduce=other_process_too)
    assert [s.roles["player_0"] for s in twice] == pytest.approx([-2.0, 2.0], abs=1e-4)
    assert rewards.metrics()["reward/a/player_0"] == 2.0


def test_shape_mistakes_of_a_reward_name_it():
    eps = [episode({"player_0": 1.0, "player_1": -1.0})]
    with pytest.raises(RuntimeError, match="'t' returned 1 turn scores for an episode with 2"):
        pipeline(("t", 1.0, None, Fixed([[1.0]], per_turn=True)))(eps)
    with pytest.raises(RuntimeError, match="'a' scored \\['judge'\\]"):
        pipeline(("a", 1.0, None, Fixed([{"judge": 1.0}])))(eps)


def test_samples_add_turn_scores_to_discounted_role_scores():
    ep = episode(
        {"player_0": 1.0, "player_1": -1.0},
        turns=(turn("player_0"), turn("player_1"), turn("player_0", "x", valid=False)),
    )
    scores = EpisodeScores({"player_0": 1.0, "player_1": None}, (0.5, -0.25, None))
    samples = episode_samples([ep], [scores], "learner", gamma=0.5, invalid_reward=-2.0)
    assert [(s.role, s.reward) for s in samples] == [
        ("player_0", 0.5 * 1.0 + 0.5),  # discounted once (one later player_0 turn) + own score
        ("player_1", -0.25),  # no role score applies: the turn score alone
        ("player_0", -2.0),  # the invalid attempt's return replaces the role part
    ]
    nothing = EpisodeScores({"player_0": None, "player_1": None}, (None, None, None))
    assert episode_samples([ep], [nothing], "learner") == []


def test_pipeline_metrics_carry_reward_counters():
    class Counting(Fixed):
        def counters(self):
            return {"unparsable": 2.0}

    eps = [episode({"player_0": 1.0, "player_1": -1.0})]
    rewards = pipeline(("j", 1.0, None, Counting([{"player_0": 1.0}])))
    rewards(eps)
    assert rewards.metrics() == {"reward/j/player_0": 1.0, "reward/j/unparsable": 2.0}
