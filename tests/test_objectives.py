"""The preference and imitation objectives, checked against hand computations.

DPO / IPO / hinge losses on fixed log-probabilities; pair formation (ties, singletons,
margin, SPIN's reference side); SFT's loss, its keep filter and STaR's rationalisation.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData, Objective, Scored
from selfplay.api.types import Episode, Turn
from selfplay.core.algorithms.dpo import DPO, Pair, pair_loss
from selfplay.core.algorithms.sft import SFT


def sample(reward: float, group=(1,), tokens=(3,), episode=0, turn=0, parts=None) -> Sample:
    return Sample(
        "g", "solver", tuple(group), tuple(tokens), (), reward, tuple(group),
        episode=episode, turn=turn, parts=parts or {},
    )  # fmt: skip


def scored(rows: list[list[float]]) -> Scored:
    logp = torch.tensor(rows, requires_grad=True)
    return Scored(logp=logp, entropy=torch.zeros_like(logp), mask=torch.ones_like(logp))


# ---- DPO -------------------------------------------------------------------------------------


def test_dpo_sigmoid_ipo_and_hinge_losses_match_the_formulas():
    # chosen: policy -1 -1, reference -1.5 -1.5 -> h_w = 1; rejected: -2 vs -1.5 -> h_l = -0.5
    current = scored([[-1.0, -1.0], [-2.0, -1.0]])
    reference = scored([[-1.5, -1.5], [-1.5, -1.0]])
    pair = Pair((sample(1.0), sample(0.0)))
    delta, beta = 1.0 - (-0.5), 0.5
    expected = {
        "sigmoid": math.log(1 + math.exp(-beta * delta)),
        "ipo": (delta - 1 / (2 * beta)) ** 2,
        "hinge": max(0.0, 1 - beta * delta),
    }
    for kind, value in expected.items():
        dpo = DPO(loss=kind, beta=beta)
        out = dpo.loss([pair], current, reference)
        assert out.loss.item() == pytest.approx(value, rel=1e-6), kind
        assert out.metrics["margin"] == pytest.approx(delta)
        assert out.metrics["reward_accuracy"] == 1.0
        assert out.metrics["chosen_reward"] == pytest.approx(beta * 1.0)
        assert out.metrics["rejected_reward"] == pytest.approx(beta * -0.5)
    assert pair_loss(torch.tensor([0.0]), 0.1, "sigmoid").item() == pytest.approx(math.log(2))


def test_dpo_gradient_raises_the_chosen_answer_and_lowers_the_rejected():
    current = scored([[-1.0], [-1.0]])
    DPO().loss(
        [Pair((sample(1.0), sample(0.0)))], current, scored([[-1.0], [-1.0]])
    ).loss.backward()
    assert current.logp.grad[0, 0] < 0 < current.logp.grad[1, 0]  # descent raises the first


def test_pairs_best_against_worst_skip_ties_singletons_and_small_gaps():
    samples = [
        sample(0.2, group=(1,)), sample(0.9, group=(1,)), sample(0.5, group=(1,)),  # a pair
        sample(0.4, group=(2,)), sample(0.4, group=(2,)),  # a tie
        sample(1.0, group=(3,)),  # alone
        sample(0.50, group=(4,)), sample(0.45, group=(4,)),  # below the margin
    ]  # fmt: skip
    dpo = DPO(margin=0.1)
    pairs = dpo.prepare(IterationData(samples))
    assert [(p.samples[0].reward, p.samples[1].reward) for p in pairs] == [(0.9, 0.2)]
    assert dpo.iteration_metrics() == {
        "pairs/formed": 1.0, "pairs/ties": 1.0, "pairs/singletons": 1.0,
        "pairs/below_margin": 1.0,
    }  # fmt: skip


def test_pair_agreement_counts_how_often_each_term_prefers_the_chosen_side():
    judge_high = sample(1.0, group=(1,), parts={"judge": 1.0, "verdict": 0.0})
    judge_low = sample(0.0, group=(1,), parts={"judge": 0.0, "verdict": 1.0})
    tied = [sample(1.0, group=(2,), parts={"judge": 1.0, "verdict": 1.0}),
            sample(0.5, group=(2,), parts={"judge": 0.5, "verdict": 1.0})]  # fmt: skip
    dpo = DPO()
    dpo.prepare(IterationData([judge_high, judge_low, *tied], terms=("judge", "verdict")))
    metrics = dpo.iteration_metrics()
    assert metrics["pairs/agree/judge"] == 1.0
    assert metrics["pairs/agree/verdict"] == pytest.approx((0 + 0.5) / 2)


def test_spin_pairs_the_reference_answer_against_each_own_answer():
    own = [sample(0.0, tokens=(7,)), sample(0.0, tokens=(9, 9)), sample(1.0, tokens=(5, 2))]
    data = IterationData(own, reference=lambda s: "5", encode=lambda text: (5, 2))
    dpo = DPO(chosen="reference")
    pairs = dpo.prepare(data)
    assert [p.samples[1].token_ids for p in pairs] == [(7,), (9, 9)]  # the copy makes no pair
    assert all(p.samples[0].token_ids == (5, 2) for p in pairs)
    assert all(p.samples[0].prompt_ids == p.samples[1].prompt_ids for p in pairs)
    assert dpo.iteration_metrics()["pairs/same_as_reference"] == 1.0
    with pytest.raises(ConfigError, match="reference answer"):
        DPO(chosen="reference").prepare(IterationData(own))


def test_dpo_anchors_to_the_iteration_unless_told_initial():
    assert DPO().refreshes_reference() and not DPO(reference="initial").refreshes_reference()
    assert DPO().wants_reference()


# ---- SFT / STaR ------------------------------------------------------------------------------


def test_sft_loss_is_the_mean_token_negative_log_likelihood():
    logp = torch.tensor([[-1.0, -3.0], [-2.0, 0.0]], requires_grad=True)
    current = Scored(logp, torch.zeros_like(logp), torch.tensor([[1, 1], [1, 0]]))
    out = SFT().loss([], current, None)
    assert out.loss.item() == pytest.approx((1 + 3 + 2) / 3)
    out.loss.backward()
    assert logp.grad[1, 1] == 0  # padding carries no gradient


def test_sft_keeps_what_passes_the_best_k_or_everything():
    samples = [sample(1.0, group=(1,)), sample(0.0, group=(1,)), sample(1.0, group=(1,)),
               sample(0.5, group=(2,)), sample(-1.5, group=(2,))]  # fmt: skip
    rewards = lambda items: [item.samples[0].reward for item in items]  # noqa: E731
    assert rewards(SFT(keep="pass").prepare(IterationData(samples))) == [1.0, 1.0, 0.5]
    assert rewards(SFT(keep="pass", threshold=0.5).prepare(IterationData(samples))) == [1.0, 1.0]
    top = SFT(keep="top-k", k=1).prepare(IterationData(samples))
    assert rewards(top) == [1.0, 0.5]
    everything = SFT(keep="all")
    assert len(everything.prepare(IterationData(samples))) == 5
    assert everything.iteration_metrics()["sft/kept_share"] == 1.0


def test_star_trains_a_kept_hinted_answer_under_the_unhinted_prompt():
    episode = Episode("math-solver", 0, {"solver": "learner"}, (), {"solver": 0.0},
                      state={"hinted_turns": [2]})  # fmt: skip
    asked, hinted_prompt = (1, 2, 3), (1, 2, 3, 99, 98)
    samples = [
        sample(0.0, group=asked, turn=0), sample(0.0, group=asked, turn=1),
        Sample("g", "solver", hinted_prompt, (4,), (), 1.0, hinted_prompt, turn=2),
    ]  # fmt: skip
    data = IterationData(samples, episodes=[episode])
    (kept,) = SFT(keep="pass", rationalize=True).prepare(data)
    assert kept.samples[0].prompt_ids == asked and kept.samples[0].token_ids == (4,)
    assert SFT(keep="pass").prepare(data) == []  # without rationalisation hints are dropped
    assert SFT(rationalize=True).game_options() == {"rationalize": True}
    assert SFT().game_options() == {}


def test_a_failed_hinted_answer_is_not_kept():
    turn = Turn("solver", "learner", (), "", None, True)
    episode = Episode("g", 0, {"solver": "learner"}, (turn,), {"solver": 0.0},
                      state={"hinted_turns": [1]})  # fmt: skip
    data = IterationData([sample(0.0, turn=0), sample(0.0, turn=1)], episodes=[episode])
    assert SFT(keep="pass", rationalize=True).prepare(data) == []


def test_objectives_are_listed_with_pg():
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": ""}
    command = [sys.executable, "-m", "selfplay.core.commands.cli", "objectives", "--json"]
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pg" in {row["name"] for row in json.loads(out.stdout)}


def bound_as(monkeypatch, cls, *overrides):
    """The run's objective, ``cls`` registered under its name, bound to a run with
    ``overrides``."""
    from selfplay.core.plan.config_loader import build_config
    from selfplay.core.plan.objectives import bound_objective
    from selfplay.plugins.manager import registries

    objectives = registries().objectives
    real = objectives.get
    monkeypatch.setattr(objectives, "get", lambda n: cls if n == cls.name else real(n))
    return bound_objective(build_config(None, {"objective": cls.name}, list(overrides)))


class Untrained(Objective):
    """An objective that is only planned, never trained."""

    def prepare(self, data):
        return []

    def loss(self, items, current, reference):
        raise AssertionError("not called")


def test_an_objective_that_reads_a_setting_it_does_not_declare_is_refused(monkeypatch):
    """An objective reads its settings from its options: one that names a shared setting in
    ``reads()`` without declaring it among its `Options` (the public API before the settings
    moved) would never see it, and is refused before any work, naming the fix."""

    class OldStyle(Untrained):
        name = "old-style"

        def reads(self):
            return frozenset({"update_epochs", "kl_coef", "role_lr_scale"})

    with pytest.raises(ConfigError, match=r"reads kl_coef, role_lr_scale .* declare each"):
        bound_as(monkeypatch, OldStyle)
    with pytest.raises(AttributeError, match=r"OldStyle\.train is gone: .*self\.options"):
        OldStyle().train  # noqa: B018


def test_an_objective_without_options_of_its_own_still_takes_its_epochs(monkeypatch):
    class Plain(Untrained):
        name = "plain"

    objective = bound_as(monkeypatch, Plain, "train.update_epochs=3")
    assert objective.shared("update_epochs") == 3
    assert objective.shared("kl_coef") == 0.0 and objective.reads() == {"update_epochs"}
    with pytest.raises(ConfigError, match="objective 'plain' has no option clip"):
        bound_as(monkeypatch, Plain, "train.clip=0.3")
