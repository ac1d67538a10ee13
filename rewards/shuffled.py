"""A control for a learning claim: the game's payoffs, shuffled among the iteration's matches.

Random rewards alone have lifted a model's scores (on Qwen, at maths: arXiv 2506.10947), so a
gain means little until the same run with a reward that no move earns gains less. ``shuffled``
is that reward: each match gets the payoffs of another match of the same iteration (a random
permutation), so the rewards keep exactly the distribution the game gave (as many wins,
losses and draws, each sum still zero) while nothing a side did decides what it gets.

    selfplay run --recipe kuhn-poker-smollm2 --seed 3                   # the claim
    selfplay run --recipe kuhn-poker-smollm2 --seed 3 --reward shuffled  # its control

The permutation is drawn from the matches' seeds, so a replay agrees. Matches are shuffled
only among matches of the same game with the same roles.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from selfplay.api.reward import Reward, RoleScores
from selfplay.api.types import Episode
from selfplay.plugins.hookspecs import hookimpl


class Shuffled(Reward):
    """The game's payoffs of another match of the iteration: a control no move earns."""

    name = "shuffled"

    def __call__(self, episodes: Sequence[Episode]) -> list[RoleScores]:
        rng = random.Random("selfplay-shuffled-" + ",".join(str(e.seed) for e in episodes))
        scores: list[RoleScores] = [{} for _ in episodes]
        kinds: dict[tuple, list[int]] = {}
        for index, episode in enumerate(episodes):
            kinds.setdefault((episode.game, tuple(sorted(episode.outcome))), []).append(index)
        for indices in kinds.values():
            donors = indices[:]
            rng.shuffle(donors)
            for index, donor in zip(indices, donors, strict=True):
                scores[index] = {r: float(v) for r, v in episodes[donor].outcome.items()}
        return scores


@hookimpl
def register_rewards(register):
    register("shuffled", Shuffled)
