"""Search targets: the moves a one-move search keeps, trained at the learner's own positions."""

from __future__ import annotations

import csv
import random

import pytest
import torch

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.objective import Scored
from selfplay.api.policy import ScriptedPolicy, searched_moves
from selfplay.api.types import Completion
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.models.scoring import score
from selfplay.core.plan.build import build_learner
from selfplay.core.plan.config_loader import build_config
from selfplay.core.rollout import play
from selfplay.core.run.trainer import train
from selfplay.core.train.branching import replay
from selfplay.core.train.samples import episode_samples
from selfplay.core.train.search_targets import SearchTargets
from selfplay.games.kuhn_poker import KuhnPoker
from selfplay.games.tictactoe import TicTacToe, TicTacToeState


class Learner(ScriptedPolicy):
    """A learner stand-in: random legal moves (some junk first), with token ids."""

    def __init__(self) -> None:
        super().__init__("random")
        self.name = "learner"

    def act(self, requests, *, greedy=False):
        out = []
        for request, done in zip(requests, super().act(requests, greedy=greedy), strict=True):
            junk = request.rng.random() < 0.1
            out.append(Completion(text="[9x]" if junk else done.text, token_ids=(1,)))
        return out


@pytest.fixture(scope="module")
def learner():
    return build_learner(build_config(None, {}, []))


def played(game, matches=40):
    learner = Learner()
    seatings = [{role: learner for role in game.roles} for _ in range(matches)]
    episodes = play(game, seatings, list(range(matches)))
    scores = [dict(ep.outcome) for ep in episodes]
    return episodes, episode_samples(episodes, scores, "learner")


@pytest.mark.parametrize(
    ("board", "kept"),
    [
        ("...xx.oo.", {"5"}),  # x wins at 5 (and need not block at 8)
        ("x.xoo....", {"1"}),  # a win comes before a block
        ("o...x.o.x", {"3"}),  # x must block o's 0-3-6
        ("oo.xoxx..", set()),  # o threatens two lines: nothing saves x
        ("....x....", {"0", "1", "2", "3", "5", "6", "7", "8"}),  # nothing at stake
    ],
)
def test_the_search_keeps_a_win_else_the_moves_that_do_not_lose_at_once(board, kept):
    game = TicTacToe()
    state = TicTacToeState(seed=0, board=board)
    assert set(searched_moves(game, state, game.to_act(state))) == kept


def test_targets_are_the_kept_moves_at_positions_where_the_search_rules_moves_out(learner):
    game = TicTacToe()
    episodes, samples = played(game)
    advantages = [float(i) for i in range(len(samples))]
    targets = SearchTargets(game, 2.0, learner)
    out, shares = targets.add(episodes, samples, advantages)
    assert out[: len(samples)] == samples and shares[: len(samples)] == advantages
    added, added_shares = out[len(samples) :], shares[len(samples) :]
    assert targets.added == len(added) > 0 and targets.metrics() == {"search_targets": len(added)}
    expected = 0
    for sample in samples:  # every learner position, checked against the search itself
        state = replay(game, episodes[sample.episode], sample.turn)
        kept = searched_moves(game, state, sample.role)
        at = [(t, a) for t, a in zip(added, added_shares, strict=True)
              if (t.episode, t.turn) == (sample.episode, sample.turn)]  # fmt: skip
        if not kept or len(kept) == len(game.legal_actions(state, sample.role)):
            assert at == []  # no opinion: nothing added
            continue
        expected += len(kept)
        assert sorted(t.token_ids for t, _ in at) == sorted(
            targets.encode(game.continuation(move)) for move in kept.values()
        )
        assert sum(a for _, a in at) == pytest.approx(2.0)  # the weight, shared by the moves
        for target, _ in at:
            assert target.prompt_ids == sample.prompt_ids and target.role == sample.role
            assert target.logprobs == () and target.reward == 0.0 and target.valid
    assert expected == len(added)


def test_a_target_is_written_as_the_learner_writes_a_move(learner):
    game = TicTacToe()
    state = TicTacToeState(seed=0, board="...xx.oo.")
    (move,) = searched_moves(game, state, game.to_act(state)).values()
    ids = SearchTargets(game, 1.0, learner).encode(game.continuation(move))
    tokenizer = learner.tokenizer
    assert tokenizer.decode(list(ids[:-1])) == game.continuation(move) == "[5]"
    assert ids[-1] == tokenizer.eos_token_id


def test_off_adds_nothing_and_a_hidden_information_game_is_refused(learner):
    game = TicTacToe()
    episodes, samples = played(game, matches=4)
    off = SearchTargets(game, 0.0, learner)
    assert off.add(episodes, samples, [0.0] * len(samples)) == (samples, [0.0] * len(samples))
    assert off.metrics() == {}
    with pytest.raises(ConfigError, match=r"train\.search_weight=1\.0 .*perfect information"):
        SearchTargets(KuhnPoker(), 1.0, learner)
    SearchTargets(KuhnPoker(), 0.0, learner)  # off: any game


def test_a_kuhn_run_with_search_targets_is_refused_before_its_folder_exists(tmp_path):
    config = build_config(
        None, {}, [f"out={tmp_path}", "game=kuhn-poker", "train.search_weight=1", "name=k"]
    )
    with pytest.raises(ConfigError, match="perfect information"):
        train(config)
    assert not (tmp_path / "k").exists()


def test_a_target_never_sampled_has_a_ratio_of_one_in_every_epoch():
    objective = PolicyGradient(update_epochs=2, clip=0.2)

    def sample(logprobs):
        return Sample("g", "x", (1,), (2, 3), logprobs, 0.0, (1,))

    items = objective.prepare(
        type("Data", (), {"samples": [sample((-9.0, -9.0)), sample(())], "advantages": [1, 1]})
    )
    logp = torch.tensor([[-1.0, -1.0], [-1.0, -1.0]], requires_grad=True)
    current = Scored(logp=logp, entropy=torch.zeros(2, 2), mask=torch.ones(2, 2, dtype=bool))
    loss = objective.loss(items, current, None)
    # the sampled row's ratio is e^8, clipped; the target's is 1: half the tokens are clipped
    assert loss.metrics["clip_fraction"] == pytest.approx(0.5)


def test_a_run_logs_its_search_targets_and_trains_on_them(tmp_path, monkeypatch):
    # every match starts where x can win at once, so even an untrained model meets a tactic
    monkeypatch.setattr(TicTacToe, "initial", lambda self, seed, rng: TicTacToeState(
        seed=seed, board="xx..o.o.."))  # fmt: skip
    flags = [f"out={tmp_path}", "matches=6", "iterations=1", "cold_start.steps=0",
             "eval.matches=2", "generation.max_new_tokens=4"]  # fmt: skip
    rows = {}
    for weight in (0, 1):
        train(build_config(None, {}, [*flags, f"name=w{weight}", f"train.search_weight={weight}"]))
        with (tmp_path / f"w{weight}" / "metrics.csv").open() as f:
            (rows[weight],) = list(csv.DictReader(f))
    assert "search_targets" not in rows[0]
    added = int(float(rows[1]["search_targets"]))
    assert added >= 6  # at least the first position of each match (junk attempts too)
    assert int(rows[1]["train_tokens"]) > int(rows[0]["train_tokens"])
    for same in ("matches", "learner_turns", "mean_reward"):
        assert rows[1][same] == rows[0][same]  # the matches themselves are not touched


def test_updates_on_search_targets_make_the_searched_moves_likelier(learner):
    """The mechanism learns: a few steps on the targets of random matches make the searched
    moves likelier than the other legal moves where the search found them."""
    game = TicTacToe()
    encode = SearchTargets(game, 1.0, learner).encode

    class Encoded(Learner):  # the stand-in's moves, in the learner's own tokens
        def act(self, requests, *, greedy=False):
            out = super().act(requests, greedy=greedy)
            ids = learner.encode(requests)
            return [Completion(c.text, encode(c.text), (), tuple(p))
                    for c, p in zip(out, ids, strict=True)]  # fmt: skip

    learner_seat = Encoded()
    seatings = [{role: learner_seat for role in game.roles} for _ in range(60)]
    episodes = play(game, seatings, list(range(100, 160)))
    samples = episode_samples(episodes, [dict(ep.outcome) for ep in episodes], "learner")
    searched = SearchTargets(game, 1.0, learner)
    samples, advantages = searched.add(episodes, samples, [0.0] * len(samples))
    objective = PolicyGradient()
    items = [i for i in objective.prepare(_Data(samples, advantages)) if i.advantage]
    trained = sorted({replay(game, episodes[i.samples[0].episode], i.samples[0].turn).board
                      for i in items})[:12]  # fmt: skip
    before = _searched_margin(game, learner, trained)
    model = learner.model
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    pad = learner.tokenizer.pad_token_id
    for step in range(30):
        batch = items[step * 16 % len(items) :][:16]
        rows = [item.samples[0] for item in batch]
        current = score(model, [r.prompt_ids for r in rows], [r.token_ids for r in rows], pad)
        optimizer.zero_grad()
        objective.loss(batch, current, None).loss.backward()
        optimizer.step()
    after = _searched_margin(game, learner, trained)
    assert after > before + 0.5, (before, after)


class _Data:
    def __init__(self, samples, advantages):
        self.samples, self.advantages = samples, advantages


def _searched_margin(game, learner, boards):
    """At ``boards``, the mean log-probability of the searched moves under ``learner`` less
    that of the other legal moves: how much it prefers what the search keeps."""
    from selfplay.api.policy import Request

    encode = SearchTargets(game, 1.0, learner).encode
    prompts, answers, kept = [], [], []
    for board in boards:
        state = TicTacToeState(seed=0, board=board)
        role = game.to_act(state)
        request = Request(game, state, role, tuple(game.observe(state, role)), random.Random(0))
        searched = set(searched_moves(game, state, role).values())
        for move in game.legal_actions(state, role):
            prompts.append(learner.encode([request])[0])
            answers.append(encode(game.continuation(move)))
            kept.append(move in searched)
    with torch.no_grad():
        scored = score(learner.model, prompts, answers, learner.tokenizer.pad_token_id)
    logp = (scored.logp * scored.mask).sum(dim=1)
    chosen = torch.tensor(kept)
    return float(logp[chosen].mean() - logp[~chosen].mean())
