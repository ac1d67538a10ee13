"""One iteration of self-play training, top to bottom.

    seat the matches (opponent sampler) -> play them in lock-step (rollout) and branch them
    -> callbacks screen them -> rewards -> per-turn returns
    -> advantages (estimator, when the objective needs them) -> the objective's items
    -> update -> the league learns from the matches -> the iteration's metrics

Every process draws the same seatings and seeds and plays its own share of the matches;
estimator statistics are summed across processes (``Processes``). The iteration knows
nothing of the run folder, the terminal or checkpoints: it returns its metrics and the
matches to log, and the run around it (core/run/trainer.py) writes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from selfplay.api.objective import IterationData
from selfplay.api.sampler import LEARNER
from selfplay.api.types import Episode
from selfplay.core.rollout import VoidMatch, play, voided
from selfplay.core.stats import episode_metrics
from selfplay.core.train.branching import play_branches
from selfplay.core.train.samples import (
    advantage_metrics,
    check_scored,
    episode_samples,
    finite_advantages,
    finite_samples,
    flat_advantages,
    invalid_return,
    nonfinite,
    recorded,
    reference_answers,
    unreadable_terms,
)
from selfplay.core.train.schedules import apply_schedules
from selfplay.core.train.seating import seat_matches
from selfplay.core.train.state import Processes, RunState

# ``phase(label, quiet=True)`` opens a step the terminal may show; the block gets a
# ``told(done, total)`` callable that reports progress within it
Phase = Callable[..., AbstractContextManager[Callable[..., None]]]


@dataclass
class Played:
    """What one iteration hands back to the run: its metrics and the matches to log."""

    row: dict[str, Any]
    episodes: list[Episode]  # every process's matches, with their records
    voided: list[VoidMatch]  # every process's voided matches


class Iteration:
    """The iteration as a callable: ``iteration(n) -> Played``; it changes ``state`` in place."""

    def __init__(
        self, state: RunState, processes: Processes, phase: Phase, say: Callable[[str], None]
    ) -> None:
        self.state, self.processes, self.phase, self.say = state, processes, phase, say
        self.unscored = 0  # iterations in a row in which no learner turn was scored

    def __call__(self, iteration: int) -> Played:
        s, config, processes = self.state, self.state.config, self.processes
        started = time.perf_counter()
        seatings, seeds = seat_matches(
            s.game, s.sampler, s.seats, s.rng, config.matches, s.league.members
        )
        share = slice(processes.rank, None, processes.world_size)
        void: list[VoidMatch] = []
        with self.phase("matches", quiet=True) as told:
            played = play(s.game, seatings[share], seeds[share], errors=void, progress=told)
            where = f"{config.seed}-{iteration}-{processes.rank}"  # names the branches' draw
            branched = play_branches(
                s.game, played, s.seats.policy, config.branches, LEARNER, where, void
            )
        void_row = voided(iteration, void, len(played), processes.sum, self.say)
        finished = time.perf_counter()

        episodes = [*played, *branched]
        for _, callback in s.callbacks:
            episodes = list(callback.on_episodes(s.view, episodes))
        scores = s.reward(episodes, reduce=processes.sum)
        gamma = config.train.gamma
        samples = episode_samples(episodes, scores, LEARNER, gamma, invalid_return(config))
        samples = [sample for sample in samples if self._trains(sample.role, iteration)]
        self.unscored = check_scored(
            iteration, episodes, samples, self.unscored, processes.sum, s.reward
        )
        samples, dropped = finite_samples(samples)

        advantages, bad_advantages = None, 0
        if s.objective.needs == "advantages":
            advantages = s.estimator(samples, reduce=processes.sum)
            advantages, bad_advantages = finite_advantages(advantages)
            samples, advantages = s.search.add(episodes, samples, advantages)
            flat_advantages(iteration, advantages, processes.sum, self.say)
        if s.objective.refreshes_reference():
            s.reference.refresh()  # the reference is this iteration's starting policy
        data = IterationData(
            samples,
            advantages,
            episodes,
            encode=s.search.encode,
            reference=reference_answers(s.game, episodes),
            terms=s.reward.labels,
            reduce=processes.sum,
        )
        schedule = apply_schedules(config, s.optimizer, s.objective, iteration)
        items = s.objective.prepare(data)
        with self.phase("update", quiet=True) as told:
            told(0, len(items))  # the bar shows the update's clock: samples trained at the end
            steps = processes.minibatches(len(items), config.train.minibatch_size)
            stats = s.updater.update(items, s.generator, steps)
        if config.train.reference_update:
            s.reference.pull(config.train.reference_update)

        played = recorded(played, episodes, scores, s.reward.notes(), iteration)
        everyone = processes.gather_episodes(played)
        totals = [scored.totals(ep) for ep, scored in zip(episodes, scores, strict=True)]
        row = {"iteration": iteration, **episode_metrics(episodes, totals, processes.sum)}
        row.update(s.reward.metrics() | stats.means() | schedule)
        unreadable_terms(iteration, row, self.say)
        row.update(s.objective.iteration_metrics() | s.search.metrics())
        row.update(s.league.after_iteration(iteration, everyone))
        row.update(void_row)
        row.update(nonfinite(iteration, dropped, bad_advantages, processes.sum, self.say))
        row.update(advantage_metrics(advantages))
        row["rollout_seconds"] = finished - started
        row["update_seconds"] = time.perf_counter() - finished
        return Played(row, everyone, processes.gather(void))

    def _trains(self, role: str, iteration: int) -> bool:
        """A role with ``train.stagger`` n trains every n-th iteration only."""
        return iteration % self.state.config.train.stagger.get(role, 1) == 0
