"""Who sits where: the opponent sampler's choices turned into seatings for a batch of matches."""

from __future__ import annotations

import random
from collections.abc import Sequence

from selfplay.api.game import Game
from selfplay.api.policy import Policy
from selfplay.api.sampler import LEARNER, OpponentSampler
from selfplay.api.types import Role
from selfplay.core.train.build import Seats


def seat_matches(
    game: Game,
    sampler: OpponentSampler,
    seats: Seats,
    rng: random.Random,
    n: int,
    members: Sequence[str] = (),
) -> tuple[list[dict[Role, Policy]], list[int]]:
    """Seatings and seeds for ``n`` matches; the learner's own seat rotates over the roles.

    Every process draws the same ``n`` seatings and seeds from the shared ``rng`` and then
    plays its own share, so the run's randomness does not depend on the number of processes.
    """
    seatings, seeds = [], []
    for i in range(n):
        learner_role = game.roles[i % len(game.roles)]
        seating = {}
        for role in game.roles:
            holder = LEARNER if role == learner_role else sampler.sample(members, rng)
            seating[role] = seats.policy(holder)
        seatings.append(seating)
        seeds.append(rng.randrange(2**31))
    return seatings, seeds
