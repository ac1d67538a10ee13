"""objective legal-pg: the gradient of the legal choice's softmax over whole answers (or
NeuRD's), with the KL and entropy exact over each decision's menu."""

from __future__ import annotations

import random

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData, Scored
from selfplay.api.policy import Request
from selfplay.core.algorithms.legal_pg import LegalPolicyGradient
from selfplay.core.commands.cli import main
from selfplay.core.models.policy_table import policy_table
from selfplay.core.models.tiny import load_tiny_policy
from selfplay.core.train.samples import answer_encoder
from selfplay.games.kuhn_poker import KuhnPoker


def _sample(tokens, menu=("a", "b", "c"), role="player_0") -> Sample:
    return Sample("g", role, (1, 2), tokens, (), 1.0, (1, 2), menu=menu)


def _encode(text: str) -> tuple[int, ...]:
    return (ord(text), 0)


def _scored(totals: list[float]) -> tuple[Scored, torch.Tensor]:
    """Rows of two tokens whose sums are ``totals`` (the second token carries the value)."""
    y = torch.tensor(totals, requires_grad=True)
    logp = torch.stack([torch.zeros(len(totals)), y], dim=1)
    return Scored(logp, torch.zeros_like(logp), torch.ones_like(logp)), y


def test_softmax_and_neurd_gradients_on_the_answer_logits_match_their_formulas():
    totals, advantage, chosen = [-1.0, -2.0, -0.5], 0.8, 1
    q = torch.softmax(torch.tensor(totals), 0)
    onehot = torch.nn.functional.one_hot(torch.tensor(chosen), 3).float()
    expected = {
        # d/dy_b of -A log q(a) = -A (1[b = a] - q_b)
        "softmax": -advantage * (onehot - q),
        # d/dy_b of -A / q(a) (y_a - mean y) = -A / q(a) (1[b = a] - 1/n)
        "neurd": -advantage / q[chosen] * (onehot - 1 / 3),
    }
    for update, grad in expected.items():
        objective = LegalPolicyGradient(update=update)
        data = IterationData([_sample(_encode("b"))], [advantage], encode=_encode)
        (decision,) = objective.prepare(data)
        assert decision.chosen == chosen and len(decision.samples) == 3
        current, y = _scored(totals)
        out = objective.loss([decision], current, None)
        out.loss.backward()
        assert torch.allclose(y.grad, grad, atol=1e-6), (update, y.grad, grad)
        assert out.metrics["chosen_prob"] == pytest.approx(float(q[chosen]))
        entropy = float(-(q * q.log()).sum())
        assert out.metrics["entropy"] == pytest.approx(entropy, rel=1e-5)


def test_neurd_caps_the_importance_weight():
    objective = LegalPolicyGradient(update="neurd", max_weight=2.0)
    (decision,) = objective.prepare(
        IterationData([_sample(_encode("a"), menu=("a", "b"))], [1.0], encode=_encode)
    )
    current, y = _scored([-9.0, 0.0])  # q(a) ~ 1e-4: the weight would be ~8000
    objective.loss([decision], current, None).loss.backward()
    assert torch.allclose(y.grad, torch.tensor([-1.0, 1.0]))  # -2 * (1 - 1/2), -2 * (0 - 1/2)


def test_the_kl_is_exact_over_the_menu_and_pulls_toward_the_reference():
    objective = LegalPolicyGradient(kl_coef=1.0)
    (decision,) = objective.prepare(
        IterationData([_sample(_encode("a"), menu=("a", "b"))], [0.0], encode=_encode)
    )
    current, y = _scored([0.0, -1.0])
    reference, _ = _scored([-1.0, 0.0])
    out = objective.loss([decision], current, reference)
    q, r = torch.softmax(torch.tensor([0.0, -1.0]), 0), torch.softmax(torch.tensor([-1.0, 0.0]), 0)
    assert out.metrics["kl"] == pytest.approx(float((q * (q / r).log()).sum()), rel=1e-5)
    out.loss.backward()  # advantage 0: only the pull, toward the reference's second answer
    assert y.grad[0] > 0 > y.grad[1]


def test_a_written_move_or_a_second_epoch_is_refused_with_the_fix():
    objective = LegalPolicyGradient()
    with pytest.raises(ConfigError, match=r"generation\.choice=legal"):
        objective.prepare(IterationData([_sample((5, 0), menu=())], [1.0], encode=_encode))
    # dropped samples (advantage None) are skipped, not checked
    assert objective.prepare(IterationData([_sample((5, 0), menu=())], [None])) == []
    with pytest.raises(ConfigError, match=r"objective_options\.update_epochs=2"):
        LegalPolicyGradient(update_epochs=2)


def test_a_run_without_the_legal_choice_is_refused_before_the_model_loads(capsys, tmp_path):
    args = ["run", "--game", "kuhn-poker", "--objective", "legal-pg", "--iterations", "1"]
    args += ["--out", str(tmp_path / "runs")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "legal-pg" in err and "--set generation.choice=legal" in err
    # two epochs are refused as early: no run folder is left behind either time
    assert main([*args, "--set", "generation.choice=legal", "--set", "train.update_epochs=2"]) == 2
    assert "objective_options.update_epochs=2" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_updates_on_one_information_set_raise_the_rewarded_answers_share():
    game = KuhnPoker()
    policy = load_tiny_policy(choice="legal", temperature=1.0)
    info = next(i for i in game.information_sets() if i.actions == ("call", "fold"))
    encode = answer_encoder(policy)
    request = Request(game, info.state, info.role, tuple(game.observe(info.state, info.role)),
                      random.Random(0))  # fmt: skip
    (completion,) = policy.act([request], greedy=True)
    menu = completion.menu
    assert len(menu) == 2 and completion.text in menu
    fold = next(m for m in menu if "fold" in m)
    sample = Sample(
        "kuhn-poker", info.role, completion.prompt_ids, encode(fold), (), 1.0,
        completion.prompt_ids, menu=menu,
    )  # fmt: skip
    objective = LegalPolicyGradient()
    optimizer = torch.optim.Adam([p for p in policy.model.parameters() if p.requires_grad], 1e-3)
    before = policy_table(policy, game)[info.key]["fold"]
    from selfplay.core.models.scoring import score

    for _ in range(5):
        (decision,) = objective.prepare(IterationData([sample], [1.0], encode=encode))
        rows = decision.samples
        current = score(
            policy.model, [s.prompt_ids for s in rows], [s.token_ids for s in rows],
            policy.pad_id, 1.0, False,
        )  # fmt: skip
        optimizer.zero_grad()
        objective.loss([decision], current, None).loss.backward()
        optimizer.step()
    after = policy_table(policy, game)[info.key]["fold"]
    assert after > before + 0.05, (before, after)
