"""Where an iteration's matches come from: played in turn, or by a producer ahead of the update.

- In turn (the default; in-process, or served with ``rollout.max_staleness`` 0): an
  iteration's matches are seated and played when it starts and trained at once. A served run
  then sends the new weights to its servers before the next iteration plays, so it trains on
  exactly the samples of the in-process run, with the learner's turns generated elsewhere.
- Overlapped (served, ``max_staleness`` >= 1): a producer thread plays the next iteration's
  matches while the trainer updates on this one (up to ``rollout.queue`` iterations ahead).
  The matches are seated by the trainer, in iteration order, from the run's generator, so the
  seeds are those of the run in turn. A batch of matches is played by one version of the
  weights from its first move to its last: new weights reach the servers only between
  batches. A batch's staleness is the count of weight syncs between the version that played
  it and the one it is trained into; past ``max_staleness`` the producer waits for newer
  weights (``stale: wait``) or the batch is dropped untrained (``stale: drop``).

Served runs log ``rollout/*`` each iteration: the batch's version and staleness (and the
largest so far), matches dropped as stale, batches queued, the seconds the trainer waited for
its matches and the producer waited for weights, and servers lost.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from selfplay.api.sampler import LEARNER, is_learner
from selfplay.api.types import Episode
from selfplay.core.league.seating import seat_matches
from selfplay.core.processes import Processes
from selfplay.core.rollout import VoidMatch, play, voided
from selfplay.core.train.branching import play_branches
from selfplay.core.train.state import RunState


@dataclass
class Batch:
    """One iteration's matches: those played, those branched off them, those voided."""

    played: list[Episode]
    branched: list[Episode]
    void: list[VoidMatch]
    metrics: dict[str, float] = field(default_factory=dict)
    version: int = 0


@dataclass
class _Job:
    iteration: int
    seatings: list[Any]
    seeds: list[int]


class Rollouts:
    """``take(n)`` the matches of iteration n; ``trained(n)`` after its update."""

    def __init__(
        self,
        state: RunState,
        processes: Processes,
        phase: Callable[..., Any],
        say: Callable[[str], None],
        sync: Any = None,  # a WeightSyncs when the learners' turns are served
    ) -> None:
        self.state, self.processes, self.phase, self.say = state, processes, phase, say
        self.sync = sync
        settings = state.config.rollout
        self.cap, self.stale, self.queue = settings.max_staleness, settings.stale, settings.queue
        self.overlap = sync is not None and self.cap >= 1
        self.submitted = 0  # the last iteration seated for the producer
        self.largest = 0
        self.dropped_total = 0
        self.jobs: queue.Queue[_Job | None] = queue.Queue()
        self.results: queue.Queue[Batch | BaseException] = queue.Queue()
        self.published = threading.Condition()
        self.producer: threading.Thread | None = None

    # ---- the trainer's side --------------------------------------------------------------

    def take(self, iteration: int) -> Batch:
        if not self.overlap:
            return self._in_turn(iteration)
        last = self.state.config.iterations
        for ahead in range(max(iteration, self.submitted + 1), iteration + self.queue + 1):
            if ahead <= last:
                self._submit(ahead)
        waited = time.perf_counter()
        with self.phase("matches", quiet=True):
            found = self.results.get()
        if isinstance(found, BaseException):
            raise found
        found.metrics["rollout/trainer_wait_seconds"] = time.perf_counter() - waited
        return self._checked(iteration, found)

    def trained(self, iteration: int) -> None:
        """After iteration ``iteration``'s update: its weights become version ``iteration``."""
        if self.sync is None:
            return
        with self.published:
            self.sync.publish(iteration)
            self.published.notify_all()
        if not self.overlap:
            self.sync.push()  # in turn: the next iteration plays with these weights

    def start(self, version: int) -> None:
        """Before the first iteration: the servers get the weights the run starts from."""
        if self.sync is None:
            return
        self.sync.check()
        self.sync.publish(version)
        self.sync.push()

    def close(self) -> None:
        if self.producer is not None:
            self.jobs.put(None)
            self.producer.join(timeout=60)
            self.producer = None

    # ---- in turn -------------------------------------------------------------------------

    def _in_turn(self, iteration: int) -> Batch:
        s, config = self.state, self.state.config
        seatings, seeds = seat_matches(
            s.game, s.sampler, s.seats, s.rng, config.matches, s.league.members
        )
        job = _Job(iteration, seatings, seeds)
        with self.phase("matches", quiet=True) as told:
            batch = self._play(job, told)
        if self.sync is not None:
            batch.metrics.update(self._served_metrics(batch, staleness=0))
        return batch

    def _play(self, job: _Job, told: Any = None) -> Batch:
        s, config, processes = self.state, self.state.config, self.processes
        share = slice(processes.rank, None, processes.world_size)
        void: list[VoidMatch] = []
        played = play(s.game, job.seatings[share], job.seeds[share], errors=void, progress=told)
        where = f"{config.seed}-{job.iteration}-{processes.rank}"  # names the branches' draw
        branched = play_branches(s.game, played, s.seats.policy, config.branches, where, void)
        version = getattr(s.seats.policy(LEARNER), "version", 0)
        if self.sync is not None:  # each seat of the learner's records the weights it played
            played = [_versioned(ep, version) for ep in played]
            branched = [_versioned(ep, version) for ep in branched]
        metrics = voided(job.iteration, void, len(played), processes.sum, self.say)
        return Batch(played, branched, void, metrics, version)

    # ---- overlapped ----------------------------------------------------------------------

    def _submit(self, iteration: int) -> None:
        s, config = self.state, self.state.config
        seatings, seeds = seat_matches(
            s.game, s.sampler, s.seats, s.rng, config.matches, s.league.members
        )
        self.jobs.put(_Job(iteration, seatings, seeds))
        self.submitted = iteration
        if self.producer is None:
            self.producer = threading.Thread(target=self._produce, name="rollouts", daemon=True)
            self.producer.start()

    def _produce(self) -> None:
        while (job := self.jobs.get()) is not None:
            try:
                waited = self._weights_for(job.iteration)
                self.sync.push()
                batch = self._play(job)
                batch.metrics["rollout/worker_wait_seconds"] = waited
                self.results.put(batch)
            except BaseException as err:  # handed to the trainer, which raises it
                self.results.put(err)
                return

    def _weights_for(self, iteration: int) -> float:
        """Wait (stale: wait) until the weights are recent enough for ``iteration``."""
        if self.stale != "wait":
            return 0.0
        needed = iteration - 1 - self.cap
        started = time.perf_counter()
        with self.published:
            while self.sync.published < needed:
                self.published.wait(timeout=1.0)
        return time.perf_counter() - started

    def _checked(self, iteration: int, batch: Batch) -> Batch:
        staleness = max(0, iteration - 1 - batch.version)
        batch.metrics.update(self._served_metrics(batch, staleness))
        if staleness > self.cap:  # stale: drop, and the producer played with old weights
            dropped = len(batch.played)
            self.dropped_total += dropped
            batch.metrics["rollout/stale_dropped"] = float(dropped)
            self.say(
                f"warning: iteration {iteration}: its {dropped} matches were played by weights "
                f"{staleness} syncs old (rollout.max_staleness={self.cap}); dropped untrained."
            )
            return Batch([], [], batch.void, batch.metrics, batch.version)
        return batch

    def _served_metrics(self, batch: Batch, staleness: int) -> dict[str, float]:
        self.largest = max(self.largest, staleness)
        failures = self.sync.failures if self.sync is not None else 0
        return {
            "rollout/version": float(batch.version),
            "rollout/staleness": float(staleness),
            "rollout/staleness_max": float(self.largest),
            "rollout/stale_dropped": 0.0,
            "rollout/queue": float(self.results.qsize()),
            "rollout/worker_failures": float(failures),
        }


def _versioned(episode: Episode, version: int) -> Episode:
    """``episode`` with the version of the weights that played each of the learner's seats."""
    seats = {role: version for role, holder in episode.seats.items() if is_learner(holder)}
    return dataclasses.replace(episode, extra={**episode.extra, "policy_version": seats})
