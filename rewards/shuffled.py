"""A control for a learning claim: the run's rewards, shuffled among the iteration's matches.

Random rewards alone have lifted a model's scores (on Qwen, at maths: arXiv 2506.10947), so a
gain means little until the same run with a reward that no move earns gains less. ``shuffled``
is that reward. It computes the rewards it names (``of``, the game's ``outcome`` by default)
and hands them out at random: each match gets the payoffs of another match of the same
iteration (a per-role reward), each turn the score of another turn (a per-turn reward, such as
``move-value``). The scores keep exactly the distribution the rewards gave (as many wins,
losses and draws, each match's payoffs still summing to zero), while nothing a side did
decides what it gets.

    selfplay run --recipe kuhn-poker-smollm2 --seed 3                   # the claim
    selfplay run --recipe kuhn-poker-smollm2 --seed 3 --reward shuffled  # its control
    selfplay run ... --reward outcome+move-value                         # a shaped claim
    selfplay run ... --reward shuffled --set 'reward_options.shuffled.of=[outcome,move-value]'

The permutations are drawn from the matches' seeds, so a replay agrees. Matches are shuffled
only among matches of the same game with the same roles, turns among turns of the same role.
Beside a per-turn reward, a per-role one is given to every turn of its role, which is what
the loop does with it at ``train.gamma=1`` (the default).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from selfplay.api.reward import (
    Reward,
    RewardContext,
    RewardError,
    RewardOptions,
    RoleScores,
    TurnScores,
)
from selfplay.api.types import Episode
from selfplay.plugins.hookspecs import hookimpl


class ShuffledOptions(RewardOptions):
    of: list[str] = Field(
        default_factory=lambda: ["outcome"],
        min_length=1,
        description="The rewards whose scores are shuffled (each with its default options): "
        "the game's outcome, or e.g. [outcome, move-value] for a shaped run's control.",
    )


class Shuffled(Reward):
    """The named rewards' scores of other matches (or turns) of the iteration: a control."""

    name = "shuffled"
    Options = ShuffledOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        from selfplay.plugins.manager import registries

        if "shuffled" in self.options.of:
            raise RewardError("reward_options.shuffled.of cannot name shuffled itself.")
        self.parts = [registries().rewards.get(name)() for name in self.options.of]
        self.per_turn = any(part.per_turn for part in self.parts)

    def bind(self, context: RewardContext) -> None:
        super().bind(context)
        for part in self.parts:
            part.bind(context)

    def __call__(self, episodes: Sequence[Episode]) -> list[RoleScores] | list[TurnScores]:
        rng = random.Random("selfplay-shuffled-" + ",".join(str(e.seed) for e in episodes))
        shuffled = []
        for part in self.parts:
            scores = part(episodes)
            shuffler = _turns if part.per_turn else _matches
            shuffled.append((part.per_turn, shuffler(episodes, scores, rng)))
        if not self.per_turn:
            return [_added([s[i] for _, s in shuffled]) for i in range(len(episodes))]
        return [_per_turn(episode, i, shuffled) for i, episode in enumerate(episodes)]


def _matches(episodes: Sequence[Episode], scores: list, rng: random.Random) -> list:
    """Per-role scores moved between matches of the same game and roles."""
    out: list = [{} for _ in episodes]
    kinds: dict[tuple, list[int]] = {}
    for index, episode in enumerate(episodes):
        kinds.setdefault((episode.game, tuple(sorted(episode.seats))), []).append(index)
    for indices in kinds.values():
        donors = indices[:]
        rng.shuffle(donors)
        for index, donor in zip(indices, donors, strict=True):
            out[index] = dict(scores[donor])
    return out


def _turns(episodes: Sequence[Episode], scores: list, rng: random.Random) -> list:
    """Per-turn scores moved between turns of the same role (a None stays where it was)."""
    out = [list(turns) for turns in scores]
    places: dict[str, list[tuple[int, int]]] = {}
    for i, episode in enumerate(episodes):
        for t, turn in enumerate(episode.turns):
            if scores[i][t] is not None:
                places.setdefault(turn.role, []).append((i, t))
    for spots in places.values():
        values = [scores[i][t] for i, t in spots]
        rng.shuffle(values)
        for (i, t), value in zip(spots, values, strict=True):
            out[i][t] = value
    return out


def _added(parts: list[RoleScores]) -> RoleScores:
    total: RoleScores = {}
    for scores in parts:
        for role, value in scores.items():
            if value is not None:
                total[role] = (total.get(role) or 0.0) + float(value)
            else:
                total.setdefault(role, None)
    return total


def _per_turn(episode: Episode, index: int, shuffled: list) -> TurnScores:
    """Every part's score of each turn, a per-role one on each turn of its role."""
    out: TurnScores = [None] * len(episode.turns)
    for per_turn, scores in shuffled:
        for t, turn in enumerate(episode.turns):
            value = scores[index][t] if per_turn else scores[index].get(turn.role)
            if value is not None:
                out[t] = (out[t] or 0.0) + float(value)
    return out


@hookimpl
def register_rewards(register):
    register("shuffled", Shuffled)
