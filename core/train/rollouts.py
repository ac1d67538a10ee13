"""Where an iteration's matches come from: played in turn, or by a producer ahead of the update.

- In turn (the default; in-process, or served with ``rollout.max_staleness`` 0): an
  iteration's matches are seated and played when it starts and trained at once. A served run
  then sends the new weights to its servers before the next iteration plays, so it trains on
  exactly the samples of the in-process run, with the learner's turns generated elsewhere.
- Overlapped (served, ``max_staleness`` >= 1): a producer thread plays the next iteration's
  matches while the trainer updates on this one (up to ``rollout.queue`` iterations ahead:
  the pipeline's depth, a setting apart from the cap). The matches are seated by the trainer,
  in iteration order, from the run's generator, so the seeds are those of the run in turn,
  and the version of the weights that plays a batch is fixed when it is seated (the newest
  published then, or the first within the cap), so an overlapped run plays the same matches
  however fast its trainer and servers run. A batch of matches is played by one version of
  the weights from its first move to its last: new weights reach the servers only between
  batches.

A batch's staleness, for a learner, is the count of that learner's own updates between the
version that played it and the weights it is trained into (a learner that updates every k
iterations ages one version per update), capped by its ``max_staleness`` (the run's, or
``learners.NAME.max_staleness``). Past the cap its ``stale`` setting says what happens: the
producer waits for newer weights (``wait``), the learner's samples are dropped untrained
(``drop``), or they are trained with their loss scaled by ``rollout.age_decay`` per version
past the cap (``reweight``, `Sampling.age_weight`). Each sample carries its staleness
(`Sample.staleness`, set by `aged`) and how it was sampled (`Sample.sampling`) for the
objective's correction.

Served runs log ``rollout/*`` each iteration: the batch's version, its staleness with the
typical (running mean) and the largest so far, its publish lag (the versions the trainer
published while the batch was being played: how far the servers' weights trailed), matches
dropped as stale, batches queued, the seconds the trainer waited for its matches and the
producer waited for weights, and servers lost. With several learners each learner's
staleness is logged under its name too.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from selfplay.api.estimator import Sample
from selfplay.api.sampler import LEARNER, is_learner
from selfplay.api.types import Episode
from selfplay.core.league.seating import seat_matches
from selfplay.core.machine.processes import Processes
from selfplay.core.models.kv_cache import new_round
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
    version: int = 0  # the weights that play it (overlapped), fixed when it is seated


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
        self.queue = state.config.rollout.queue
        # each learner's cap and what happens past it (its settings, else the run's)
        self.caps = {
            learner.name: (learner.config.rollout.max_staleness, learner.config.rollout.stale)
            for learner in state.learners
        }
        top = max([state.config.rollout.max_staleness, *(c for c, _ in self.caps.values())])
        self.overlap = sync is not None and top >= 1
        self.submitted = 0  # the last iteration seated for the producer
        self.largest = 0
        self.batches, self.staleness_sum = 0, 0.0
        self.dropped_total = 0
        self.skip: set[str] = set()  # learners whose samples of this batch go untrained
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
        new_round()  # no preamble kept from before: a resumed run plays as the one that went on
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
        if self.sync is not None:  # versions published while these matches were played
            metrics["rollout/publish_lag"] = float(max(0, self.sync.published - version))
        return Batch(played, branched, void, metrics, version)

    # ---- overlapped ----------------------------------------------------------------------

    def _submit(self, iteration: int) -> None:
        s, config = self.state, self.state.config
        seatings, seeds = seat_matches(
            s.game, s.sampler, s.seats, s.rng, config.matches, s.league.members
        )
        self.jobs.put(_Job(iteration, seatings, seeds, self._version_for(iteration)))
        self.submitted = iteration
        if self.producer is None:
            self.producer = threading.Thread(target=self._produce, name="rollouts", daemon=True)
            self.producer.start()

    def _produce(self) -> None:
        while (job := self.jobs.get()) is not None:
            try:
                waited = self._weights_for(job.version)
                self.sync.push(job.version)
                batch = self._play(job)
                batch.metrics["rollout/worker_wait_seconds"] = waited
                self.results.put(batch)
            except BaseException as err:  # handed to the trainer, which raises it
                self.results.put(err)
                return

    def _lag(self, name: str, version: int, iteration: int) -> int:
        """Learner ``name``'s own updates between ``version`` and the weights that train
        iteration ``iteration`` (those after ``iteration - 1``)."""
        learner = next(ln for ln in self.state.learners if ln.name == name)
        return sum(1 for j in range(version + 1, iteration) if learner.trains(j))

    def _version_for(self, iteration: int) -> int:
        """The weights that play ``iteration``: the newest published when it is seated (a
        point of the trainer's own sequence, so the choice never depends on timing), or, for
        a learner whose ``stale`` is ``wait``, the first version within its cap."""
        version = self.sync.published
        waiting = [(name, cap) for name, (cap, stale) in self.caps.items() if stale == "wait"]
        while version < iteration - 1 and any(
            self._lag(name, version, iteration) > cap for name, cap in waiting
        ):
            version += 1
        return version

    def _weights_for(self, version: int) -> float:
        """Wait until the trainer has published ``version``."""
        started = time.perf_counter()
        with self.published:
            while self.sync.published < version:
                self.published.wait(timeout=1.0)
        return time.perf_counter() - started

    def _checked(self, iteration: int, batch: Batch) -> Batch:
        lags = {name: self._lag(name, batch.version, iteration) for name in self.caps}
        staleness = max(lags.values(), default=0)
        batch.metrics.update(self._served_metrics(batch, staleness))
        if len(lags) > 1:
            for name, lag in lags.items():
                batch.metrics[f"{name}/rollout/staleness"] = float(lag)
        over = [n for n, lag in lags.items() if lag > self.caps[n][0] and self.caps[n][1] == "drop"]
        self.skip = set(over)
        if not over:
            return batch
        dropped = len(batch.played)
        self.dropped_total += dropped
        batch.metrics["rollout/stale_dropped"] = float(dropped)
        whose = "" if self.state.shared else f" of {', '.join(over)}"
        self.say(
            f"warning: iteration {iteration}: the turns{whose} in its {dropped} matches were "
            f"played by weights {staleness} versions old (past max_staleness); dropped "
            "untrained."
        )
        if len(over) < len(lags):  # the other learners train on these matches
            return batch
        self.skip = set()
        return Batch([], [], batch.void, batch.metrics, batch.version)

    def aged(
        self, learner: Any, samples: list[Sample], episodes: list[Episode], iteration: int
    ) -> list[Sample]:
        """``learner``'s samples of this iteration, each with its staleness (in its own
        versions)."""
        if not self.overlap:
            return samples
        aged = []
        for sample in samples:
            played = episodes[sample.episode].extra.get("policy_version", {}).get(sample.role)
            lag = 0 if played is None else self._lag(learner.name, played, iteration)
            aged.append(dataclasses.replace(sample, staleness=lag) if lag else sample)
        return aged

    def kept(self, name: str, samples: list[Sample]) -> list[Sample]:
        """Learner ``name``'s samples to train: none when its turns of this batch were played
        past its cap and its ``stale`` is ``drop``."""
        return [] if name in self.skip else samples

    def _served_metrics(self, batch: Batch, staleness: int) -> dict[str, float]:
        self.largest = max(self.largest, staleness)
        self.batches += 1
        self.staleness_sum += staleness
        failures = self.sync.failures if self.sync is not None else 0
        return {
            "rollout/version": float(batch.version),
            "rollout/staleness": float(staleness),
            "rollout/staleness_mean": self.staleness_sum / self.batches,
            "rollout/staleness_max": float(self.largest),
            "rollout/publish_lag": batch.metrics.get("rollout/publish_lag", 0.0),
            "rollout/stale_dropped": 0.0,
            "rollout/queue": float(self.results.qsize()),
            "rollout/worker_failures": float(failures),
        }


def _versioned(episode: Episode, version: int) -> Episode:
    """``episode`` with the version of the weights that played each of the learner's seats."""
    seats = {role: version for role, holder in episode.seats.items() if is_learner(holder)}
    return dataclasses.replace(episode, extra={**episode.extra, "policy_version": seats})
