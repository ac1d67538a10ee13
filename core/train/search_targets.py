"""Search targets: the learner's moves measured against a one-move search over the rules.

A policy gradient learns a tactic only from the matches in which it happened to sample the
tactic and then won: slowly, since at a position with one winning move a near-uniform policy
samples it once in five. Expert iteration (Anthony et al., 2017) and AlphaZero (Silver et al.,
2018) train the policy toward what a search over the rules finds at the positions it
reached in self-play. Here the search is the cheapest one, `searched_moves`: take a win at
once, else avoid a move after which the next player wins at once. At every learner position
of the iteration where that search rules some moves out, each move it keeps joins the update
as a sample of its own, with advantage ``train.search_weight`` shared among them (with one
update epoch the policy gradient then is a weighted log-likelihood of those moves); the
samples the learner played keep their own advantages. Positions where the search keeps every
move, or none, add nothing.

The search reads the whole state, so it serves games of perfect information only; every
opponent is still the learner or its snapshots, and no scripted player of the game is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.game import Game, GameState
from selfplay.api.policy import searched_moves
from selfplay.api.types import Episode
from selfplay.core.train.samples import answer_encoder

__all__ = ["SearchTargets"]

# fields that never change what a legal move leads to: one position, whatever the match
_BOOKKEEPING = {"seed", "retries", "error", "invalid"}
_CACHED = 200_000  # positions remembered (tic-tac-toe has 5,478); beyond, start afresh


class SearchTargets:
    """Adds the search's moves at the learner's positions to an iteration's samples."""

    def __init__(self, game: Game, weight: float, learner: Any) -> None:
        self.game, self.weight = game, weight
        self.encode = answer_encoder(learner)  # also the objective's (IterationData.encode)
        self.added = 0
        # a position met again, in this iteration or a later one, is searched once
        self._searched: dict[tuple[str, str], dict[str, str]] = {}
        if weight and not game.perfect_information:
            raise ConfigError(
                f"train.search_weight={weight} needs a game of perfect information: the "
                f"search reads the whole state, and {game.name!r} hides information. "
                "Set train.search_weight=0 for this game."
            )
        if weight and self.encode is None:
            raise ConfigError(
                f"train.search_weight={weight} needs a learner with a tokenizer, to write the "
                "search's moves as answers; set train.search_weight=0."
            )

    def add(
        self,
        episodes: Sequence[Episode],
        samples: list[Sample],
        advantages: list[float | None],
    ) -> tuple[list[Sample], list[float | None]]:
        """``samples`` and ``advantages`` with the search's targets after them."""
        self.added = 0
        if not self.weight or self.encode is None:
            return samples, advantages
        targets: list[Sample] = []
        shares: list[float | None] = []
        searched = self._searched
        if len(searched) > _CACHED:
            searched.clear()
        walks: dict[int, list[GameState]] = {}  # each match replayed once, not once per turn
        for sample in samples:
            if sample.episode not in walks:
                walks[sample.episode] = _states(self.game, episodes[sample.episode])
            state = walks[sample.episode][sample.turn]
            key = (sample.role, state.model_dump_json(exclude=_BOOKKEEPING))
            if key not in searched:
                searched[key] = self._search(state, sample.role)
            kept = searched[key]
            if not kept:
                continue
            targets.extend(self._target(sample, move) for move in kept.values())
            shares.extend([self.weight / len(kept)] * len(kept))
        self.added = len(targets)
        return [*samples, *targets], [*advantages, *shares]

    def _search(self, state: GameState, role: str) -> dict[str, str]:
        """The moves the search keeps; empty when it keeps every move or none (it has no
        opinion there, and nothing is learned from it)."""
        kept = searched_moves(self.game, state, role)
        return kept if len(kept) < len(self.game.legal_actions(state, role)) else {}

    def _target(self, sample: Sample, move: str) -> Sample:
        assert self.encode is not None
        return replace(
            sample,
            token_ids=self.encode(self.game.continuation(move)),
            logprobs=(),  # never sampled: the objective takes the current policy as old
            reward=0.0,
            valid=True,
            parts={},
        )

    def metrics(self) -> dict[str, float]:
        return {"search_targets": float(self.added)} if self.weight else {}


def _states(game: Game, episode: Episode) -> list[GameState]:
    """The state before each turn of ``episode`` (as ``replay`` rebuilds one), in one walk."""
    states = [game.start(episode)]
    for turn in episode.turns[:-1]:
        states.append(game.judge(states[-1], turn.role, turn.text)[0])
    return states
