"""The run as plug-ins see it: a small, typed, read-only view, never the trainer.

Callbacks, the league and samplers receive a `RunView`. It names what a plug-in may read
(the config, the game, the learner, the run folder, the iteration) and the few things it may
ask of the run (a seat holder's policy, a barrier, a line on the console, a reset of the
optimiser's moments after weights were restored), so the trainer's attributes stay private
and can change without breaking a plug-in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from selfplay.api.game import Game
    from selfplay.api.policy import Policy
    from selfplay.api.sampler import OpponentSampler


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class RunView:
    """What a plug-in may read of a run, and ask of it.

    ``folder`` is the run folder on process 0 and None on the others (only process 0 writes);
    ``iteration`` is the iteration being run (0 before the first); ``last`` says whether it is
    the run's last (its iteration count or time limit reached; known from ``on_iteration_end``
    on); ``resumed`` says whether the run continues from a checkpoint; ``rank`` is this
    process's number (0 to ``world_size - 1``). ``policy(holder)`` turns a seat-holder name
    (``learner``, ``scripted:random``, ``snapshot:5``) into its policy; ``barrier()`` waits for
    every process; ``say(text)`` prints a line on the console of process 0;
    ``reset_optimizer()`` forgets the optimiser's moments (after restoring older weights).
    ``learner`` is the policy being trained; in a run of several learners (docs/learners.md)
    the first one, and ``learners`` holds each one's policy by its seat-holder name
    (``learner:NAME``; empty with one shared policy).
    """

    config: Any  # the run's RunConfig (pydantic); read it, never change it
    game: Game
    learner: Policy
    sampler: OpponentSampler
    folder: Path | None = None
    iteration: int = 0
    last: bool = False
    resumed: bool = False
    is_main: bool = True
    rank: int = 0
    world_size: int = 1
    policy: Callable[[str], Policy] | None = None
    barrier: Callable[[], None] = _nothing
    say: Callable[[str], None] = print
    reset_optimizer: Callable[[], None] = _nothing
    learners: dict[str, Policy] = dataclasses.field(default_factory=dict)

    def at(self, iteration: int, last: bool = False) -> RunView:
        """The same view at another iteration (``last``: the run's last)."""
        return dataclasses.replace(self, iteration=iteration, last=last)
