"""legal-pg's ``update: all-answers``: every legal answer moved by its value from the position.

The played answer's return goes into a table of (position, answer) records; each answer of a
menu is valued from its record, shrunk toward the position's mean, and the loss's gradient on
the answers' logits is q * (value - q . value), the expected policy gradient over the menu."""

from __future__ import annotations

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData, Scored
from selfplay.core.algorithms.legal_pg import LegalPolicyGradient

MENU = ("a", "b", "c")


def encode(text: str) -> tuple[int, ...]:
    return (ord(text), 0)


def played(answer: str, reward: float, prompt=(1, 2), role="r") -> Sample:
    return Sample("g", role, prompt, encode(answer), (), reward, prompt, menu=MENU)


def objective(**options) -> LegalPolicyGradient:
    return LegalPolicyGradient(**{"update": "all-answers", "kl_coef": 0.0, **options})


def gradient(obj: LegalPolicyGradient, samples: list[Sample], totals: list[float]):
    """(the decisions, the gradient on the first decision's answer logits)."""
    decisions = obj.prepare(IterationData(samples, [0.0] * len(samples), encode=encode))
    y = torch.tensor(totals, dtype=torch.float32, requires_grad=True)
    rows = len(decisions) * len(MENU)
    logits = y.repeat(len(decisions))
    current = Scored(
        torch.stack([torch.zeros(rows), logits], 1), torch.zeros(rows, 2), torch.ones(rows, 2)
    )
    obj.loss(decisions[:1], current, None).loss.backward()
    return decisions, y.grad


def test_each_answer_is_valued_by_its_own_returns_and_unseen_ones_by_the_positions_mean():
    samples = [played("a", 1.0), played("a", 1.0), played("b", -1.0)]
    decisions, _ = gradient(objective(value_decay=1.0, value_prior=1.0), samples, [0, 0, 0])
    mean = (1 + 1 - 1) / 3
    a, b, c = decisions[0].values
    assert a == pytest.approx((2 + mean) / 3)
    assert b == pytest.approx((-1 + mean) / 2)
    assert c == pytest.approx(mean)  # never played: the position's mean
    assert all(d.values == decisions[0].values for d in decisions)  # one position, one menu


def test_the_gradient_on_the_logits_is_q_times_value_less_its_expectation():
    totals = [0.0, -1.0, 0.5]
    decisions, grad = gradient(objective(), [played("a", 1.0), played("b", -1.0)], totals)
    q = torch.softmax(torch.tensor(totals), 0)
    values = torch.tensor(decisions[0].values)
    expected = -(q * (values - (q * values).sum()))
    assert torch.allclose(grad, expected, atol=1e-6)
    assert grad[0] < 0 and grad[1] > 0  # a step down the loss raises a, lowers b


def test_the_gradient_does_not_depend_on_which_answer_was_played():
    samples = [played("a", 1.0), played("b", -1.0)]
    first, g1 = gradient(objective(), samples, [0.0, 0.0, 0.0])
    second, g2 = gradient(objective(), samples[::-1], [0.0, 0.0, 0.0])
    assert first[0].values == second[0].values
    assert torch.allclose(g1, g2)


def test_positions_and_roles_keep_separate_records():
    obj = objective(value_decay=1.0)
    samples = [played("a", 1.0), played("a", -1.0, prompt=(3, 4)), played("a", -1.0, role="s")]
    decisions, _ = gradient(obj, samples, [0, 0, 0])
    assert decisions[0].values[0] > 0 > decisions[1].values[0]
    assert decisions[2].values[0] < 0


def test_records_decay_across_iterations_and_survive_a_checkpoint():
    obj = objective(value_decay=0.5, value_prior=1e-9)
    gradient(obj, [played("a", 1.0)], [0, 0, 0])
    decisions, _ = gradient(obj, [played("a", -1.0)], [0, 0, 0])
    # (0.5 * 1 - 1) / (0.5 * 1 + 1): the older return weighs half
    assert decisions[0].values[0] == pytest.approx(-1 / 3, abs=1e-6)
    restored = objective(value_decay=0.5, value_prior=1e-9)
    restored.load_state_dict(obj.state_dict())
    again, _ = gradient(restored, [played("b", 0.0)], [0, 0, 0])
    assert again[0].values[0] == pytest.approx(-1 / 3, abs=1e-6)  # 0 had it been lost


def test_a_non_finite_return_is_left_out_of_the_record():
    decisions, grad = gradient(
        objective(value_decay=1.0), [played("a", float("nan")), played("b", 1.0)], [0, 0, 0]
    )
    assert all(v == v for v in decisions[0].values)  # no NaN reaches a value
    assert torch.isfinite(grad).all()


def test_repeated_updates_on_one_position_move_the_choice_to_the_best_answer():
    obj = objective(value_decay=0.9)
    y = torch.zeros(3, requires_grad=True)
    optimiser = torch.optim.SGD([y], lr=1.0)
    rewards = {"a": 0.0, "b": 1.0, "c": -1.0}
    generator = torch.Generator().manual_seed(0)
    for _ in range(60):
        q = torch.softmax(y.detach(), 0)
        picks = torch.multinomial(q, 8, replacement=True, generator=generator).tolist()
        samples = [played(MENU[i], rewards[MENU[i]]) for i in picks]
        decisions = obj.prepare(IterationData(samples, [0.0] * 8, encode=encode))
        rows = 8 * 3
        logits = y.repeat(8)
        current = Scored(
            torch.stack([torch.zeros(rows), logits], 1), torch.zeros(rows, 2), torch.ones(rows, 2)
        )
        optimiser.zero_grad()
        obj.loss(decisions, current, None).loss.backward()
        optimiser.step()
    assert torch.softmax(y.detach(), 0)[1] > 0.9


def test_neurd_moves_each_logit_by_its_centred_advantage_without_the_softmax_factor():
    totals = [0.0, -1.0, 0.5]
    samples = [played("a", 1.0), played("b", -1.0)]
    decisions, grad = gradient(objective(update="all-answers-neurd"), samples, totals)
    q = torch.softmax(torch.tensor(totals), 0)
    values = torch.tensor(decisions[0].values)
    advantage = values - (q * values).sum()
    assert torch.allclose(grad, -(advantage - advantage.mean()), atol=1e-6)
    _, softmax_grad = gradient(objective(), samples, totals)
    assert grad.abs().sum() > softmax_grad.abs().sum()  # no q(b) factor shrinking it


def test_neurd_does_not_fade_at_a_nearly_pure_choice():
    pure = [8.0, 0.0, 0.0]  # q(a) ~ 0.999: the softmax's step nearly vanishes
    samples = [played("a", -1.0), played("b", 1.0), played("c", 1.0)]
    _, neurd = gradient(objective(update="all-answers-neurd", logit_threshold=10), samples, pure)
    _, softmax = gradient(objective(), samples, pure)
    assert neurd[0] > 0.5 and softmax[0] < 0.01  # a descent step lowers a, the worst answer


def test_neurd_drops_the_push_on_a_logit_past_the_threshold():
    samples = [played("a", 1.0), played("b", -1.0), played("c", -1.0)]
    totals = [3.0, 0.0, 0.0]  # a is 2 above the menu's mean
    held, grad = gradient(
        objective(update="all-answers-neurd", logit_threshold=2.0), samples, totals
    )
    _, free = gradient(objective(update="all-answers-neurd", logit_threshold=5.0), samples, totals)
    q = torch.softmax(torch.tensor(totals), 0)
    values = torch.tensor(held[0].values)
    advantage = values - (q * values).sum()
    assert advantage[0] > 0 and (advantage[1:] < 0).all()
    kept = advantage.clone()
    kept[0] = 0.0  # a, past the threshold and ahead, is pushed no further up
    assert torch.allclose(grad, -(kept - kept.mean()), atol=1e-6)
    assert torch.allclose(free, -(advantage - advantage.mean()), atol=1e-6)
    assert -grad[0] < -free[0]


def test_an_option_the_update_does_not_read_is_refused_with_the_update_that_does():
    with pytest.raises(
        ConfigError, match=r"update='softmax' does not read .*value_decay.*all-answers"
    ):
        LegalPolicyGradient(value_decay=0.5)
    with pytest.raises(ConfigError, match=r"logit_threshold is read by update=all-answers-neurd"):
        LegalPolicyGradient(update="all-answers", logit_threshold=2.0)
    LegalPolicyGradient(update="all-answers-neurd", value_decay=0.5, logit_threshold=2.0)


def test_the_bonus_values_a_seldom_played_answer_above_its_record():
    samples = [played("a", 1.0)] * 8 + [played("b", 1.0)]
    plain, _ = gradient(objective(value_decay=1.0), samples, [0, 0, 0])
    bonus, _ = gradient(objective(value_decay=1.0, value_bonus=0.5), samples, [0, 0, 0])
    a, b, c = (x - y for x, y in zip(bonus[0].values, plain[0].values, strict=True))
    assert a == pytest.approx(0.5 / 3) and b == pytest.approx(0.5 / 2**0.5)
    assert c == pytest.approx(0.5)  # never played: the whole bonus, so it is tried
    # a copy of the options passes every field at its default: not refused
    LegalPolicyGradient(**LegalPolicyGradient().options.model_dump())


def test_the_bonus_falls_linearly_to_zero_over_its_iterations():
    obj = objective(value_bonus=0.5, value_bonus_iterations=4)
    assert [obj.bonus_at(i) for i in (0, 1, 2, 3, 5, 9)] == pytest.approx(
        [0.5, 0.5, 0.375, 0.25, 0.0, 0.0]
    )
    assert objective(value_bonus=0.5).bonus_at(1000) == 0.5  # no span: held
    samples = [played("a", 1.0)] * 8 + [played("b", 1.0)]
    plain = objective(value_decay=1.0).prepare(
        IterationData(samples, [0.0] * len(samples), encode=encode)
    )
    later = objective(value_decay=1.0, value_bonus=0.5, value_bonus_iterations=4).prepare(
        IterationData(samples, [0.0] * len(samples), encode=encode, iteration=3)
    )
    a, b, c = (x - y for x, y in zip(later[0].values, plain[0].values, strict=True))
    assert c == pytest.approx(0.25) and a == pytest.approx(0.25 / 3)  # half the bonus
    assert b == pytest.approx(0.25 / 2**0.5)
    with pytest.raises(ConfigError, match=r"value_bonus_iterations=4 .* value_bonus is 0"):
        objective(value_bonus_iterations=4)


def test_a_run_hands_the_objective_each_iteration(monkeypatch, tmp_path):
    """The loop passes the iteration to `prepare`, so the bonus's schedule follows the run."""
    from selfplay.core.commands.cli import main

    seen = []
    real = LegalPolicyGradient.bonus_at

    def bonus_at(self, iteration):
        seen.append(iteration)
        return real(self, iteration)

    monkeypatch.setattr(LegalPolicyGradient, "bonus_at", bonus_at)
    args = ["run", "--game", "kuhn-poker", "--objective", "legal-pg", "--iterations", "3"]
    args += ["--matches", "4", "--cold-start", "0", "--out", str(tmp_path), "--seed", "0"]
    for option in ("generation.choice=legal", "objective_options.update=all-answers"):
        args += ["--set", option]
    args += ["--set", "objective_options.value_bonus=0.5"]
    args += ["--set", "objective_options.value_bonus_iterations=2", "--eval-every", "0"]
    assert main(args) == 0
    assert seen == [1, 2, 3]
