"""generation.choice=legal: the learner picks one of the game's legal answers, sampled by the
model's probability of each, and the trainer sees an ordinary completion of that answer."""

from __future__ import annotations

import random

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Request
from selfplay.core.commands.cli import main
from selfplay.core.models.policy_table import policy_table
from selfplay.core.models.scoring import score
from selfplay.core.models.tiny import load_tiny_policy
from selfplay.core.plan.config_loader import build_config
from selfplay.core.rollout import play
from selfplay.games.kuhn_poker import KuhnPoker
from selfplay.games.math_solver import MathSolver


def _requests(game, info, n: int, first_seed: int = 0) -> list[Request]:
    messages = tuple(game.observe(info.state, info.role))
    return [
        Request(game, info.state, info.role, messages, random.Random(first_seed + i))
        for i in range(n)
    ]


def _opening_after_a_bet(game):
    """An information set that follows a bet: its legal answers are call and fold only."""
    return next(i for i in game.information_sets() if i.actions == ("call", "fold"))


def test_an_untrained_model_plays_only_legal_moves():
    game = KuhnPoker()
    free, legal = load_tiny_policy(), load_tiny_policy(choice="legal")
    episodes = {
        name: play(game, [{"player_0": p, "player_1": p}] * 8, list(range(8)))
        for name, p in (("free", free), ("legal", legal))
    }
    assert any(not t.valid for e in episodes["free"] for t in e.turns)  # the task is real
    for episode in episodes["legal"]:
        assert episode.outcome is not None
        assert all(t.valid for t in episode.turns)


def test_choices_follow_the_policy_table_and_greedy_takes_its_argmax():
    game = KuhnPoker()
    policy = load_tiny_policy(choice="legal", temperature=1.0)
    info = _opening_after_a_bet(game)
    p_call = policy_table(policy, game)[info.key]["call"]
    n = 600
    texts = [c.text for c in policy.act(_requests(game, info, n))]
    assert set(texts) <= {"[call]", "[fold]"}
    share = texts.count("[call]") / n
    sigma = (p_call * (1 - p_call) / n) ** 0.5
    assert abs(share - p_call) < 4 * sigma + 1e-3, (share, p_call)
    (greedy,) = policy.act(_requests(game, info, 1), greedy=True)
    assert greedy.text == ("[call]" if p_call >= 0.5 else "[fold]")
    # a match chooses the same whatever shares its batch
    alone = policy.act(_requests(game, info, 1, first_seed=7))[0].text
    assert texts[7] == alone


def test_the_completion_is_what_the_trainer_rescores():
    game = KuhnPoker({"answer_prefix": "["})
    policy = load_tiny_policy(choice="legal", temperature=0.7)
    info = _opening_after_a_bet(game)
    completions = policy.act(_requests(game, info, 6))
    for c in completions:
        assert c.text in {"call]", "fold]"}  # the continuation of the prefix
        assert c.token_ids[-1] in policy.stop_ids
        assert policy.tokenizer.decode(list(c.token_ids), skip_special_tokens=True) == c.text
        again = score(policy.model, [c.prompt_ids], [c.token_ids], policy.pad_id, 0.7, False)
        assert torch.allclose(again.logp[0], torch.tensor(c.logprobs), atol=1e-4)
        assert game.judge(info.state, info.role, c.text)[1] in {"call", "fold"}


def test_a_game_that_lists_samples_not_every_move_is_written_freely_or_refused(capsys):
    # math-solver's legal_actions are a right and a wrong answer for its scripted players:
    # choosing among them would hand the learner the answer
    game = MathSolver()
    assert game.legal_actions(game.reset(0), game.roles[0]) and not game.lists_every_move
    state = game.reset(0)
    messages = tuple(game.observe(state, game.roles[0]))
    written = [
        load_tiny_policy(choice=choice).act(
            [Request(game, state, game.roles[0], messages, random.Random(1))]
        )[0]
        for choice in ("free", "legal")
    ]
    assert written[0] == written[1]
    args = ["run", "--game", "math-solver", "--set", "generation.choice=legal", "--iterations", "1"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "generation.choice=legal" in err and "math-solver" in err and "choice=free" in err


def test_a_bad_choice_is_refused_with_the_ones_there_are():
    with pytest.raises(ValueError, match=r"free, legal.*'any'"):
        load_tiny_policy(choice="any")
    with pytest.raises(ConfigError, match=r"generation\.choice"):
        build_config(overrides=["generation.choice=any"])


LEGAL_PG = ["--objective", "legal-pg", "--set", "train.kl_coef=0.5"]
LEGAL_PG += ["--set", "train.reference_update=0.05"]


@pytest.mark.parametrize("objective", [[], LEGAL_PG], ids=["pg", "legal-pg"])
def test_a_run_with_legal_choice_trains_and_forfeits_nothing(tmp_path, objective):
    args = ["run", "--game", "kuhn-poker", "--cold-start", "0", "--iterations", "2"]
    args += ["--matches", "8", "--set", "eval.matches=4", "--set", "threads=1"]
    args += ["--set", "generation.choice=legal", "--out", str(tmp_path), "--name", "run"]
    args += objective
    threads = torch.get_num_threads()
    try:
        assert main(args) == 0
    finally:
        torch.set_num_threads(threads)
    rows = (tmp_path / "run" / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    for row in rows[1:]:
        values = dict(zip(header, row.split(","), strict=True))
        assert float(values["invalid_rate"]) == 0.0
        assert float(values["grad_norm"]) > 0  # the chosen answers were trained on
        if objective:  # legal-pg logs the mean probability of the chosen answers
            assert 0 < float(values["chosen_prob"]) < 1


def test_a_chat_request_without_a_game_is_written_freely():
    # `selfplay serve` asks with no game: a checkpoint trained with choice=legal still answers
    from selfplay.api.types import Message

    messages = (Message("user", "Hello"),)
    answers = [
        load_tiny_policy(choice=choice).act(
            [Request(None, None, "assistant", messages, random.Random(3))]
        )[0]
        for choice in ("free", "legal")
    ]
    assert answers[0] == answers[1] and answers[0].token_ids
