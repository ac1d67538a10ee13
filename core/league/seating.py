"""Who sits where: seat-holder names turned into policies, and seatings for a batch of matches.

A served holder (``openai:URL#MODEL``) becomes a `selfplay.core.models.served.policy.ServedPolicy`
with the learner's generation settings, made once like a scripted player."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from selfplay.api.errors import ConfigError, blame
from selfplay.api.game import Game
from selfplay.api.policy import GreedyPolicy, LookaheadPolicy, Policy, ScriptedPolicy, has_player
from selfplay.api.sampler import (
    GREEDY_LEARNER,
    LEARNER,
    LOOKAHEAD_LEARNER,
    REPLAYS,
    OpponentSampler,
    is_served,
    is_snapshot,
    learner_snapshot,
    split_snapshot,
)
from selfplay.api.types import Episode, Role


@dataclass
class Seats:
    """Resolves seat-holder names from samplers into policies (scripted ones made once).

    Snapshot names go to ``snapshots``, which loads pool members on demand.
    """

    learner: Policy
    game: Game
    snapshots: Callable[[str], Policy] | None = None
    # several learners: each one's policy by name, and the name of the learner of each role
    learners: dict[str, Policy] = field(default_factory=dict)
    owners: dict[Role, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._cache: dict[str, Policy] = {LEARNER: self.learner}
        self._cache[GREEDY_LEARNER] = GreedyPolicy(self.learner)
        self._cache[LOOKAHEAD_LEARNER] = LookaheadPolicy(self.learner)
        for name, policy in self.learners.items():
            self._cache[name] = policy
            self._cache[f"{name}:greedy"] = GreedyPolicy(policy)
            self._cache[f"{name}:lookahead"] = LookaheadPolicy(policy)

    def holder(self, name: str, role: Role) -> str:
        """A sampler's holder for ``role`` as this run seats it: with several learners, the
        learner (greedy, lookahead) is the one that plays ``role``, and a pool member is that
        learner's snapshot."""
        if not self.owners:
            return name
        if is_snapshot(name):
            return learner_snapshot(name, self.owners[role].partition(":")[2])
        if name == LEARNER or name.startswith(f"{LEARNER}:"):
            return self.owners[role] + name[len(LEARNER) :]
        return name

    def sampler_name(self, holder: str) -> str:
        """`holder`'s inverse: the name a sampler knows a seat's holder by (``learner:NAME``
        is ``learner``, ``snapshot:12:NAME`` is ``snapshot:12``)."""
        if not self.owners:
            return holder
        if is_snapshot(holder):
            return split_snapshot(holder)[0]
        kind, _, rest = holder.partition(":")
        if kind == LEARNER and rest and rest not in REPLAYS:
            _, _, replay = rest.partition(":")
            return f"{LEARNER}:{replay}" if replay else LEARNER
        return holder

    def as_sampled(self, episodes: Sequence[Episode]) -> list[Episode]:
        """Episodes with their seats named as the sampler names them, for its `update`."""
        if not self.owners:
            return list(episodes)
        return [
            replace(ep, seats={r: self.sampler_name(h) for r, h in ep.seats.items()})
            for ep in episodes
        ]

    def policy(self, holder: str) -> Policy:
        if is_snapshot(holder) and self.snapshots is not None:
            return self.snapshots(holder)
        if holder not in self._cache and is_served(holder):
            from selfplay.core.models.served.policy import served_policy

            self._cache[holder] = served_policy(holder, like=self.learner, name=holder)
        if holder not in self._cache:
            kind, _, player = holder.partition(":")
            if kind != "scripted" or not has_player(self.game, player):
                known = ", ".join(sorted(self.game.players)) or "none"
                raise ConfigError(
                    f"Unknown seat holder {holder!r} for {self.game.name}; "
                    f"scripted players: {known}."
                )
            self._cache[holder] = ScriptedPolicy(player)
        return self._cache[holder]


def seat_matches(
    game: Game,
    sampler: OpponentSampler,
    seats: Seats,
    rng: random.Random,
    n: int,
    members: Sequence[str] = (),
) -> tuple[list[dict[Role, Policy]], list[int]]:
    """Seatings and seeds for ``n`` matches; the learner's own seat rotates over the roles
    (with several learners, every seat the sampler gives "the learner" is its role's learner).

    Every process draws the same ``n`` seatings and seeds from the shared ``rng`` and then
    plays its own share, so the run's randomness does not depend on the number of processes.
    """
    seatings, seeds = [], []
    name = getattr(sampler, "name", type(sampler).__name__)
    for i in range(n):
        learner_role = game.roles[i % len(game.roles)]
        seating = {}
        for role in game.roles:
            holder = LEARNER
            if role != learner_role:
                with blame(f"Opponent sampler {name!r}, choosing an opponent,"):
                    holder = sampler.sample(members, rng)
            seating[role] = seats.policy(seats.holder(holder, role))
        seatings.append(seating)
        seeds.append(rng.randrange(2**31))
    return seatings, seeds
