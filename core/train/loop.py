"""One iteration of self-play training, top to bottom.

    the iteration's matches (core/train/rollouts.py: seated by the opponent sampler, played
    in lock-step and branched; in turn, or ahead by a producer when rollouts are served)
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
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from selfplay.api.errors import blame
from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData
from selfplay.api.types import Episode
from selfplay.core.machine.memory import OutOfMemory, first_line, out_of_memory
from selfplay.core.machine.processes import Processes
from selfplay.core.rollout import VoidMatch
from selfplay.core.stats import episode_metrics
from selfplay.core.train.checks import check_scored, flat_advantages, nonfinite, unreadable_terms
from selfplay.core.train.learners import Learner
from selfplay.core.train.metrics_row import MetricsRow
from selfplay.core.train.records import recorded
from selfplay.core.train.rollouts import Rollouts
from selfplay.core.train.samples import (
    advantage_metrics,
    episode_samples,
    finite_advantages,
    finite_samples,
    invalid_return,
    reference_answers,
)
from selfplay.core.train.schedules import apply_schedules
from selfplay.core.train.state import RunState

# ``phase(label, quiet=True)`` opens a step the terminal may show; the block gets a
# ``told(done, total)`` callable that reports progress within it
Phase = Callable[..., AbstractContextManager[Callable[..., None]]]


@dataclass
class Trained:
    """One learner's share of the iteration's metrics (``prefix``: its name, with several)."""

    prefix: str
    stats: Any  # the updater's statistics (core/train/update/stats.py)
    schedule: dict[str, float]
    objective: dict[str, float]
    search: dict[str, float]
    nonfinite: dict[str, float]
    advantages: Any


@dataclass
class Played:
    """What one iteration hands back to the run: its metrics and the matches to log."""

    row: MetricsRow
    episodes: list[Episode]  # every process's matches, with their records
    voided: list[VoidMatch]  # every process's voided matches


class Iteration:
    """The iteration as a callable: ``iteration(n) -> Played``; it changes ``state`` in place."""

    def __init__(
        self,
        state: RunState,
        processes: Processes,
        phase: Phase,
        say: Callable[[str], None],
        rollouts: Rollouts,
    ) -> None:
        self.state, self.processes, self.phase, self.say = state, processes, phase, say
        self.rollouts = rollouts
        self.unscored = 0  # iterations in a row in which no learner turn was scored

    def __call__(self, iteration: int) -> Played:
        s, processes = self.state, self.processes
        started = time.perf_counter()
        with self._memory("Playing the iteration's matches", self._rollout_settings()):
            batch = self.rollouts.take(iteration)  # seated and played (core/train/rollouts.py)
        processes.heap.release()  # what the rollout freed goes back to the system
        played, branched, void = batch.played, batch.branched, batch.void
        finished = time.perf_counter()

        episodes = [*played, *branched]
        for _, callback in s.callbacks:
            episodes = list(callback.on_episodes(s.view, episodes))
        scores = s.reward(episodes, reduce=processes.sum)
        mine = {
            learner.name: self._samples(learner, episodes, scores, iteration)
            for learner in s.learners
        }
        every_sample = [sample for samples in mine.values() for sample in samples]
        self.unscored = check_scored(
            iteration, episodes, every_sample, self.unscored, processes.sum, s.reward
        )
        mine = {name: self.rollouts.kept(name, samples) for name, samples in mine.items()}
        trained = [
            self._train(learner, mine[learner.name], episodes, iteration) for learner in s.learners
        ]
        self.rollouts.trained(iteration)  # served: the new weights go to the rollout servers

        played = recorded(played, episodes, scores, s.reward.notes(), iteration)
        everyone = processes.gather_episodes(played)
        league = s.league.after_iteration(iteration, everyone)  # the league learns
        row = self._row(iteration, episodes, scores, trained, league, batch.metrics)
        row.timed(finished - started, time.perf_counter() - finished)
        return Played(row, everyone, processes.gather(void))

    def _row(
        self,
        iteration: int,
        episodes: list[Episode],
        scores: Any,
        trained: list[Trained],
        league: dict[str, float],
        rollout: dict[str, Any],
    ) -> MetricsRow:
        """The iteration's metrics, in metrics.csv's column order."""
        totals = [scored.totals(ep) for ep, scored in zip(episodes, scores, strict=True)]
        row = MetricsRow(iteration)
        row.add(episode_metrics(episodes, totals, self.processes.sum))
        row.add(self.state.reward.metrics())
        for done in trained:
            row.add(done.stats.means() | done.schedule, done.prefix)
        unreadable_terms(iteration, row, self.say)
        for done in trained:
            row.add(done.objective | done.search, done.prefix)
        row.add(league)
        row.add(rollout)  # matches/errors, and rollout/* when served
        for done in trained:
            row.add(done.nonfinite, done.prefix)
        for done in trained:
            row.add(advantage_metrics(done.advantages), done.prefix)
        return row

    def _samples(
        self, learner: Learner, episodes: list[Episode], scores: Any, iteration: int
    ) -> list[Sample]:
        """The learner's turns of the iteration, with their returns, when it trains now."""
        train = learner.config.train
        invalid = invalid_return(learner.config)
        samples = episode_samples(
            episodes, scores, learner.seat, train.gamma, invalid, learner.sampling
        )
        samples = self.rollouts.aged(learner, samples, episodes, iteration)  # served: their age
        return [
            sample
            for sample in samples
            if learner.trains(iteration) and self._trains(learner, sample.role, iteration)
        ]

    def _train(
        self, learner: Learner, samples: list[Sample], episodes: list[Episode], iteration: int
    ) -> Trained:
        """One learner's update on its samples: advantages, the objective's items, the step."""
        s, processes, config = self.state, self.processes, learner.config
        objective, search = learner.objective, learner.search
        samples, dropped = finite_samples(samples)
        advantages, bad_advantages = None, 0
        if objective.needs == "advantages":
            advantages = learner.estimator(samples, reduce=processes.sum)
            advantages, bad_advantages = finite_advantages(advantages)
            samples, advantages = search.add(episodes, samples, advantages)
            flat_advantages(iteration, advantages, processes.sum, self.say)
        if objective.refreshes_reference():
            learner.reference.refresh()  # the reference is this iteration's starting policy
        data = IterationData(
            samples,
            advantages,
            episodes,
            encode=search.encode,
            reference=reference_answers(s.game, episodes),
            terms=s.reward.labels,
            reduce=processes.sum,
            iteration=iteration,
        )
        schedule = apply_schedules(config, learner.optimizer, objective, iteration, learner.kl_coef)
        with blame(f"Objective {config.objective!r}, preparing {len(samples)} samples,"):
            items = objective.prepare(data)
        with self.phase("update", quiet=True) as told:
            told(0, len(items))  # the bar shows the update's clock: samples trained at the end
            steps = processes.minibatches(len(items), config.train.minibatch_size)
            with (
                self._memory("The update", self._update_settings(learner)),
                processes.heap.updating(),
            ):
                stats = learner.updater.update(items, s.generator, steps)
        if config.train.reference_update:
            learner.reference.pull(config.train.reference_update)
        with blame(f"Objective {config.objective!r}, reporting its iteration metrics,"):
            reported = objective.iteration_metrics()
        bad = nonfinite(iteration, dropped, bad_advantages, processes.sum, self.say)
        prefix = "" if s.shared else f"{learner.name}/"
        return Trained(prefix, stats, schedule, reported, search.metrics(), bad, advantages)

    @contextmanager
    def _memory(self, what: str, advice: tuple[str, str | None]) -> Iterator[None]:
        """An allocation that fails becomes `OutOfMemory`, naming what to lower."""
        try:
            yield
        except Exception as err:
            if not out_of_memory(err):
                raise
            settings, resume_with = advice
            raise OutOfMemory(
                f"{what} ran out of memory ({first_line(err)}). {settings}", resume_with
            ) from None

    def _update_settings(self, learner: Learner) -> tuple[str, str | None]:
        """What to lower, and the setting a resume may lower (docs/troubleshooting.md)."""
        train = learner.config.train
        prefix = "" if self.state.shared else f"learners.{learner.name}."
        minibatch = (
            f"a smaller train.minibatch_size (now {train.minibatch_size}) changes what is "
            "trained, so it needs a new run."
        )
        if train.micro_batch_size:
            half = max(1, train.micro_batch_size // 2)
            return (
                f"Lower train.micro_batch_size (now {train.micro_batch_size}), e.g. to {half}: "
                f"a resume may; {minibatch}",
                f"{prefix}train.micro_batch_size={half}",
            )
        tokens = learner.updater.micro_batch_tokens
        now = "null: the whole minibatch" if tokens is None else tokens.tokens or "auto"
        return (
            f"Lower train.micro_batch_tokens (now {now}), e.g. to 512: a resume may; {minibatch}",
            f"{prefix}train.micro_batch_tokens=512",
        )

    def _rollout_settings(self) -> tuple[str, str | None]:
        config = self.state.config
        return (
            f"Lower matches (now {config.matches}) or generation.max_new_tokens (now "
            f"{config.generation.max_new_tokens}); both change what is trained, so they need a "
            "new run.",
            None,
        )

    def _trains(self, learner: Learner, role: str, iteration: int) -> bool:
        """A role with ``train.stagger`` n trains every n-th iteration only."""
        return iteration % learner.config.train.stagger.get(role, 1) == 0
