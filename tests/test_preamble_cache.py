"""The preamble every prompt shares is kept between calls while the weights stay the same:
the same tokens and log-probabilities as computing it anew, thrown away when a weight moves,
narrowed to what every call shares, and never taken from one prompt alone."""

from __future__ import annotations

import random

import pytest
import torch

from selfplay.api.policy import Request
from selfplay.api.types import Message
from selfplay.core.models.hf_policy import HFPolicy
from selfplay.core.models.kv_cache import MIN_PREAMBLE, PreambleCache, new_round
from selfplay.core.models.tiny import build_tiny
from selfplay.games.tictactoe import TicTacToe

GAME = TicTacToe()
RULES = "Tic-tac-toe on a 3x3 board. Answer with an empty cell number in brackets, like [4]."
BOARDS = ["x1o|345|678", "012|345|678", "xo2|x45|o78", "xox|3o5|6x8"]


def requests(seed: int, opening: str = "Board") -> list[Request]:
    out = []
    for i, board in enumerate(BOARDS):
        messages = (Message("system", RULES), Message("user", f"{opening} {board}. Your move?"))
        out.append(
            Request(GAME, GAME.reset(seed + i), "player_0", messages, random.Random(seed + i))
        )
    return out


@pytest.fixture(scope="module")
def lively():
    return build_tiny(seed=3, initializer_range=0.3)


def pair(lively) -> tuple[HFPolicy, HFPolicy]:
    """The same model twice: one keeping the preamble, one computing it every call."""
    model, tokenizer = lively
    kept = HFPolicy(model, tokenizer, max_new_tokens=6)
    fresh = HFPolicy(model, tokenizer, max_new_tokens=6)
    fresh.preamble = None
    return kept, fresh


def same(a, b) -> None:
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    for x, y in zip(a, b, strict=True):
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)


@pytest.mark.parametrize("greedy", [True, False])
def test_the_preamble_is_kept_between_calls_and_changes_nothing(lively, greedy):
    kept, fresh = pair(lively)
    for seed in (0, 10, 20):
        same(kept.act(requests(seed), greedy=greedy), fresh.act(requests(seed), greedy=greedy))
    assert kept.preamble.hits == 2 and kept.preamble.misses == 1  # computed once, read twice
    (entry,) = kept.preamble.entries.values()
    assert len(entry.tokens) >= MIN_PREAMBLE


def test_a_single_prompt_reads_the_preamble_but_never_starts_one(lively):
    kept, fresh = pair(lively)
    one = requests(0)[:1]
    same(kept.act(one, greedy=True), fresh.act(one, greedy=True))
    assert not kept.preamble.entries  # one prompt alone is no evidence of a preamble
    kept.act(requests(0), greedy=True)
    same(kept.act(requests(5)[:1], greedy=True), fresh.act(requests(5)[:1], greedy=True))
    assert kept.preamble.hits == 1


def test_a_change_to_the_weights_throws_the_preamble_away(lively):
    model, tokenizer = build_tiny(seed=4, initializer_range=0.3)
    kept = HFPolicy(model, tokenizer, max_new_tokens=6)
    kept.act(requests(0), greedy=True)
    with torch.no_grad():
        next(model.parameters()).mul_(1.5)  # an optimiser step, a loaded snapshot, a sync
    fresh = HFPolicy(model, tokenizer, max_new_tokens=6)
    fresh.preamble = None
    same(kept.act(requests(3), greedy=True), fresh.act(requests(3), greedy=True))
    assert kept.preamble.hits == 0 and kept.preamble.misses == 2


def test_the_preamble_narrows_to_what_every_call_shares(lively):
    kept, fresh = pair(lively)
    kept.act(requests(0, opening="Board now"), greedy=True)
    (first,) = kept.preamble.entries.values()
    same(kept.act(requests(1, opening="Board"), greedy=True), fresh.act(requests(1), greedy=True))
    (narrowed,) = kept.preamble.entries.values()
    assert len(narrowed.tokens) < len(first.tokens)
    assert narrowed.tokens == first.tokens[: len(narrowed.tokens)]
    assert kept.preamble.hits == 1


def test_a_new_round_forgets_every_kept_preamble(lively):
    """Each iteration's matches start afresh (core/train/rollouts.py calls `new_round`), so
    what a resumed run's first matches compute does not depend on what was kept before."""
    kept, fresh = pair(lively)
    kept.act(requests(0), greedy=True)
    new_round()
    first = kept.act(requests(7), greedy=True)
    assert kept.preamble.hits == 0 and kept.preamble.misses == 2
    fresh.preamble = PreambleCache()
    again = fresh.act(requests(7), greedy=True)  # a policy that kept nothing: the same numbers
    assert [c.logprobs for c in first] == [c.logprobs for c in again]
