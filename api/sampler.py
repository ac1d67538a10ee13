"""Opponent samplers choose who holds the non-learner seats of each match.

A sampler answers with seat-holder names, never with models: ``"learner"`` is the policy being
trained (in a run of several learners, the learner of the seat's role: its turns are recorded
as ``"learner:NAME"``), ``"scripted:<player>"`` a game's scripted player,
``"snapshot:<iteration>"`` a frozen copy of the learner kept in the pool and
``"openai:<url>#<model>"`` a model played by an OpenAI-compatible server. The loop turns names
into policies, takes the snapshots and plays the matches a sampler asks for, so samplers stay
free of the training machinery and their whole state is a few lists and numbers that a
checkpoint carries.

In a run of several learners, samplers see the same names: each learner keeps a pool, a
seat's ``"snapshot:12"`` plays the snapshot of the learner of that role (recorded as
``"snapshot:12:NAME"``), and the episodes a sampler learns from name every learner
``"learner"`` and every learner's snapshot by its pool name.

What the loop calls, in order, each iteration:

    sample(members, rng)          the holder of one opponent seat, once per seat
    update(episodes)              learn from the finished training matches
    every pool.snapshot_every iterations, when ``uses_pool``:
        the loop adds a snapshot to the pool (and evicts one when full), then
        wanted_matches(members)   pairs of members whose matches the sampler wants played;
        update(those episodes)    the loop plays them and hands back the episodes

The pool itself (`Pool`: scripted members and snapshots by name, bounded, oldest evicted
first) is kept by the run's league; samplers read its members.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from selfplay.api.options import Options

if TYPE_CHECKING:
    from selfplay.api.ratings import Payoffs

LEARNER = "learner"
# the learner playing its argmax moves: an opponent seat it does not train on
GREEDY_LEARNER = "learner:greedy"
# the learner's argmax moves checked one move ahead against the rules (api/policy.py)
LOOKAHEAD_LEARNER = "learner:lookahead"
# the learner's replays, which play but never train: learner:greedy, learner:NAME:greedy
REPLAYS = ("greedy", "lookahead")
SNAPSHOT = "snapshot"
SERVED = "openai"


def scripted(player: str) -> str:
    return f"scripted:{player}"


def snapshot(iteration: int) -> str:
    """The pool name of the learner as it was after ``iteration`` (0: the starting policy)."""
    return f"{SNAPSHOT}:{iteration}"


def is_snapshot(name: str) -> bool:
    return name.startswith(f"{SNAPSHOT}:")


def learner_snapshot(name: str, learner: str) -> str:
    """Learner ``learner``'s copy of pool member ``name`` in a run of several learners:
    ``snapshot:12`` of the learner ``solver`` is ``snapshot:12:solver``."""
    return f"{name}:{learner}"


def split_snapshot(holder: str) -> tuple[str, str | None]:
    """(pool name, learner name or None): ``snapshot:12:solver`` is (``snapshot:12``,
    ``solver``); ``snapshot:12`` is (``snapshot:12``, None)."""
    kind, _, rest = holder.partition(":")
    iteration, _, learner = rest.partition(":")
    return f"{kind}:{iteration}", learner or None


def is_learner(name: str) -> bool:
    """Whether a seat holder is a policy being trained: ``learner``, or ``learner:NAME`` for
    each learner of a run of several (not the learner's greedy or lookahead replays)."""
    kind, _, rest = name.partition(":")
    return kind == LEARNER and rest not in REPLAYS and ":" not in rest


def learner_seat(name: str) -> str:
    """The seat-holder name of learner ``name`` (``learner`` for the shared policy)."""
    return LEARNER if name == LEARNER else f"{LEARNER}:{name}"


def is_served(name: str) -> bool:
    """Whether ``name`` is a served model, ``openai:http://HOST:PORT/v1#MODEL``."""
    return name.startswith(f"{SERVED}:")


class OpponentSampler(ABC):
    """Picks a seat holder for an opponent seat; may learn from finished matches.

    Options arrive as keyword arguments (``opponent_options``) and are validated by the
    sampler's ``Options`` class; ``positional`` names the option that ``--opponent NAME:ARG``
    sets (``pool:0.5`` is ``p_latest=0.5``).
    """

    name: ClassVar[str] = "sampler"
    Options: ClassVar[type[Options]] = Options
    positional: ClassVar[str | None] = None
    #: True when the sampler draws from the pool of snapshots: the loop then takes them.
    uses_pool: bool = False
    #: The league's payoff table (api/ratings/payoffs.py) under the names this sampler knows the
    #: holders by, handed to it before each ``update``: the matches every pair of holders
    #: played, the sampler's own requests (``wanted_matches``) among them. None outside a run.
    payoff_table: Payoffs | None = None

    def __init__(self, **options: Any) -> None:
        self.options = type(self).Options(**options)

    def check(self, game: Any) -> None:
        """Refuse, before any work, a setting this game cannot play (a missing player)."""
        del game

    @abstractmethod
    def sample(self, members: Sequence[str], rng: random.Random) -> str:
        """The holder of one opponent seat; ``members`` are the pool's names (oldest first)."""

    def update(self, episodes: Sequence[Any]) -> None:
        """Learn from finished episodes (ratings, a meta-strategy from ``payoff_table``, which
        already holds them); stateless by default."""

    def wanted_matches(self, members: Sequence[str]) -> list[tuple[str, str]]:
        """Pairs of members whose matches the sampler wants played after the pool changed."""
        del members
        return []

    def mixture(self, members: Sequence[str]) -> dict[str, float] | None:
        """The probability of facing each member, when the sampler has one (else None)."""
        del members
        return None

    def metrics(self) -> dict[str, float]:
        """Numbers worth a column in metrics.csv (ratings, meta-strategy weights)."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        del state


@dataclass
class Pool:
    """Members by name, oldest snapshot first; scripted members listed before them."""

    size: int = 8
    scripted: list[str] = field(default_factory=list)
    snapshots: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.size < 2:
            raise ValueError(
                f"pool.size must be at least 2 (the starting policy and one more), got {self.size}."
            )
        self.scripted = [
            p if p.startswith("scripted:") or is_served(p) else scripted(p) for p in self.scripted
        ]

    @property
    def members(self) -> list[str]:
        return [*self.scripted, *self.snapshots]

    def add(self, name: str) -> list[str]:
        """Add a snapshot; returns the names evicted to keep the size (see the module doc)."""
        if name in self.snapshots:
            return []
        self.snapshots.append(name)
        evicted = []
        while len(self.snapshots) > self.size:
            evicted.append(self.snapshots.pop(1))  # index 0 is the starting policy
        return evicted

    def state_dict(self) -> dict[str, Any]:
        return {"snapshots": list(self.snapshots)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.snapshots = list(state["snapshots"])
