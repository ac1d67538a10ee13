"""A training run, on Lightning Fabric: the loop around the iteration.

    build the parts by name (core/run/build.py) -> the run folder
    -> set the learner up: adapters, device, cold start, optimiser, reference (model_setup.py)
    -> resume from the newest checkpoint (resume.py), or start the league
    -> each iteration (core/train/loop.py), then the hooks: the run's own duties first
       (core/run/duties/: the episode log, evaluations, the metrics row, the display, the
       weight average's hand-over, checkpoints, plots), then the users' callbacks

Fabric owns devices, precision, the DDP / DeepSpeed strategies, checkpoint I/O and loggers;
the loop itself is ours. Process 0 alone writes the run folder. Plug-ins see the run through
a `RunView`, never through the trainer.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import torch
from rich.markup import escape

from selfplay.api.callback import Callback
from selfplay.api.errors import ConfigError
from selfplay.api.game import Game
from selfplay.api.reward import RewardContext
from selfplay.api.run_view import RunView
from selfplay.api.sampler import OpponentSampler, learner_seat
from selfplay.core.config import RunConfig
from selfplay.core.config.learners import served
from selfplay.core.league.keep_best import check_keep_best
from selfplay.core.league.league import League
from selfplay.core.league.seating import Seats
from selfplay.core.league.snapshots import snapshot_store
from selfplay.core.models.loading import hub_folder
from selfplay.core.models.reward_models import RewardModels
from selfplay.core.processes import Processes
from selfplay.core.run import faults, resume
from selfplay.core.run.build import (
    build_callbacks,
    build_game,
    build_reward,
    build_sampler,
    check_players,
    train_settings,
)
from selfplay.core.run.duties.checkpoints import (
    Checkpoints,
    LeagueTables,
    WeightAverageHandOver,
)
from selfplay.core.run.duties.display import Display, Plots
from selfplay.core.run.duties.duty import Duty, TrainResult
from selfplay.core.run.duties.evaluations import Evaluations
from selfplay.core.run.duties.records import EpisodeLog, MetricsLog
from selfplay.core.run.hardware import (
    build_fabric,
    core_split,
    frozen_heap,
    quiet_libraries,
    set_threads,
    thread_split,
)
from selfplay.core.run.model_setup import (
    build_learners,
    check_learner_judges,
    prepare_learner,
)
from selfplay.core.run.progress import Phase, RunDisplay
from selfplay.core.run.recipes import reads, resolve
from selfplay.core.run.run_folder import open_run_folder
from selfplay.core.run.trackers import Trackers, check_loggers
from selfplay.core.serving.backend import Backend, check_rollout_servers, served_backend
from selfplay.core.train.learners import Learner, policies
from selfplay.core.train.loop import Iteration
from selfplay.core.train.rollouts import Rollouts
from selfplay.core.train.state import RunState


@dataclass
class Parts:
    """The run's plug-ins and learner, built by name and checked before any work."""

    game: Game
    sampler: OpponentSampler
    reward: Any  # the reward pipeline (core/reward_pipeline.py)
    callbacks: list[tuple[str, Callback]]
    learners: list[Learner]  # the shared policy, or one per group of roles

    @classmethod
    def build(cls, config: RunConfig) -> Parts:
        game = build_game(config)
        sampler = build_sampler(config, game)
        reward = build_reward(config, game)
        callbacks = build_callbacks(config)
        check_players(config, game)
        check_keep_best(config)
        check_learner_judges(config, reward.models)
        learners = build_learners(config, game)
        return cls(game, sampler, reward, callbacks, learners)


def train(config: RunConfig, console: Any = None) -> TrainResult:
    quiet_libraries()
    config = resolve(config)  # the recipe's settings under the user's (core/run/recipes.py)
    # before Fabric launches the other processes (they rerun this command: a refusal there
    # would come once per process, and under pytest a whole test session per process)
    check_rollout_servers(config)
    fabric = build_fabric(config)
    fabric.launch()
    threads, worker_threads = thread_split(config)
    set_threads(threads, console.print if console is not None else None)
    split = core_split(config)  # before the trainer keeps to its own cores
    if split is not None:  # local rollout workers: the trainer keeps to cores of its own
        os.sched_setaffinity(0, split[0])
    cores = split[1] if split else None
    return Trainer(fabric, config, console, (worker_threads, cores)).run()


class Trainer:
    def __init__(
        self,
        fabric: L.Fabric,
        config: RunConfig,
        console: Any = None,
        workers: tuple[int, list[list[int]] | None] = (0, None),
    ) -> None:
        self.workers = workers  # each local rollout worker's threads and cores (None: any)
        self.fabric, self.config, self.console = fabric, config, console
        self.processes = Processes(fabric, trim=config.hardware.malloc_trim)
        self.main = self.processes.main
        torch.manual_seed(config.seed)
        self.parts = Parts.build(config)
        check_rollout_servers(config, fabric.world_size)
        check_loggers(config.loggers, config.logger_options)  # before the run folder is made
        self.folder = open_run_folder(config, self.main)
        self.display: Any = None  # the run's bar, while it shows
        self.trackers = Trackers(self.folder, config) if self.folder else None
        self.state: RunState | None = None  # once the learner is set up
        self.shared: Path | None = None  # the run folder, as every process knows it
        self.looping = False  # whether the iterations began: a stop then keeps a checkpoint
        self.backend: Backend | None = None  # the served rollouts' servers, when served
        self.rollouts: Rollouts | None = None

    # ---- set-up ----------------------------------------------------------------------------

    def _set_up(self, resuming: bool) -> RunState:
        config, parts, fabric = self.config, self.parts, self.fabric
        console = self.console if self.main else None
        for learner in parts.learners:
            train = learner.config.train
            kl = "kl_coef" in reads(learner.objective)  # the objective's own KL, if scheduled
            kl_coef = train_settings(learner.config, learner.objective).kl_coef
            wanted = (
                (kl and (kl_coef > 0 or train.kl_coef_step > 0))
                or learner.objective.wants_reference()
                or any(name.partition(":")[0] == "reference" for name in parts.reward.models)
            )
            prepare_learner(
                fabric, self.processes, learner, parts.game, wanted, resuming, self._say, console
            )
        first = parts.learners[0]
        models = RewardModels(config, first.policy, first.reference, parts.learners)
        shown = lambda label: self._phase(label, quiet=True)  # noqa: E731
        device = str(fabric.device)
        context = RewardContext(parts.game, models, device, models.measure, shown, hub_folder)
        parts.reward.bind(context)
        for line in parts.reward.notices():
            self._say(f"[yellow]note:[/yellow] {escape(line)}")
        path = self.folder.path if self.folder else config.resume or config.out
        self.shared = shared = Path(self.processes.broadcast(path))
        store = snapshot_store(config, parts.learners, shared / "pool", self.main)
        seat = first.policy
        several = policies(parts.learners) if config.learners else {}
        if served(config):  # the learners' turns on rollout servers (core/serving/)
            threads, cores = self.workers
            threads = threads or thread_split(config)[1]
            self.backend = backend = served_backend(
                config, parts.learners, shared, threads, self._say, cores
            )
            seat = backend.learner
            several = {learner_seat(n): p for n, p in backend.learners.items()} if several else {}
        owners = {role: learner.seat for learner in parts.learners for role in learner.roles}
        seats = Seats(
            seat,
            parts.game,
            snapshots=store,
            learners=several,
            owners=owners if several else {},
        )
        view = RunView(
            config=config,
            game=parts.game,
            learner=first.policy,
            sampler=parts.sampler,
            folder=self.folder.path if self.folder else None,
            resumed=resuming,
            is_main=self.main,
            rank=self.processes.rank,
            world_size=self.processes.world_size,
            policy=seats.policy,
            barrier=fabric.barrier,
            say=self._say,
            reset_optimizer=self._reset_optimizer,
            learners=several,
        )
        if config.hardware.malloc_trim:
            for learner in parts.learners:  # between backward passes
                learner.updater.release = self.processes.heap.release
        return RunState(
            config=config,
            game=parts.game,
            learners=parts.learners,
            sampler=parts.sampler,
            reward=parts.reward,
            callbacks=parts.callbacks,
            rng=random.Random(config.seed),
            generator=torch.Generator().manual_seed(config.seed),
            seats=seats,
            league=League(view, seats, store),
            view=view,
        )

    # ---- the run ---------------------------------------------------------------------------

    def run(self) -> TrainResult:
        """Train; a faulty plug-in or a failed write stops the run, saying what it keeps."""
        with faults.stopping(self.trackers, lambda: self.shared if self.looping else None):
            try:
                return self._train()
            finally:
                if self.rollouts is not None:
                    self.rollouts.close()
                if self.backend is not None:
                    self.backend.close()

    def _train(self) -> TrainResult:
        """The loop alone: the run's duties (core/run/duties/) and the users' callbacks do the
        rest, on the same hooks, the duties first."""
        config = self.config
        state, start, iterate = self._start()
        result = TrainResult(self.folder)
        duties = self._duties(state, result)
        hooks = [*duties, *(callback for _, callback in state.callbacks)]
        with self.display, frozen_heap():  # the collector skips what setup built (hardware.py)
            state.view = state.view.at(start)
            for hook in hooks:
                hook.on_train_start(state.view)
            for iteration in range(start + 1, config.iterations + 1):
                state.view = state.view.at(iteration)
                played = iterate(iteration)
                for duty in duties:
                    duty.on_played(state.view, played)
                for hook in hooks:
                    hook.on_iteration_metrics(state.view, played.episodes, played.row)
                last = iteration == config.iterations or self._out_of_time()
                state.view = state.view.at(iteration, last=last)
                for hook in hooks:
                    hook.on_iteration_end(state.view, played.row)
                if last:
                    break
            for hook in hooks:
                hook.on_train_end(state.view, result)
        return result

    def _start(self) -> tuple[RunState, int, Iteration]:
        """Set up, then resume the newest checkpoint or start the league; the iteration."""
        config = self.config
        found = resume.checkpoints(config.resume, self._say) if config.resume else None
        resuming = bool(found and found.complete)
        self.display = RunDisplay(config, self.folder, self.console, self.main)
        self.display.header()  # before the cold start
        self.state = state = self._set_up(resuming=resuming)
        assert self.shared is not None
        if resuming:
            resume.restore_newest(state, self.fabric, found, self.folder, self._say)
        elif config.resume and self.folder:
            self.folder.truncate(0, 0)  # it certainly never wrote a checkpoint: start over
        self.looping = True
        start = state.progress.iteration
        if not resuming:
            state.league.start()
        self.started = time.perf_counter()
        if config.resume and start >= config.iterations:
            raise ConfigError(
                f"{config.resume} has already trained {start} iterations; "
                f"--iterations {config.iterations} leaves nothing to train. "
                "--iterations is the total: pass a larger one."
            )
        sync = self.backend.sync if self.backend is not None else None
        self.rollouts = Rollouts(state, self.processes, self._phase, self._say, sync)
        self.rollouts.start(version=start)  # served: the servers get the weights we start from
        return state, start, Iteration(state, self.processes, self._phase, self._say, self.rollouts)

    def _duties(self, state: RunState, result: TrainResult) -> list[Duty]:
        """The run's own duties, in the order they are called (core/run/duties/duty.py)."""
        assert self.shared is not None
        return [
            EpisodeLog(self.folder),
            Evaluations(state, self._phase, result),
            MetricsLog(self.trackers, state.progress, result, self.started),
            Display(self.display, self.folder, result, self._say),
            WeightAverageHandOver(state),
            Checkpoints(state, self.fabric, self.shared, self.folder),
            LeagueTables(state.league, self.folder, self.config.checkpoint_every),
            Plots(self.folder, self._say),
        ]

    # ---- pieces ----------------------------------------------------------------------------

    def _out_of_time(self) -> bool:
        """Every process must agree, so process 0's clock decides."""
        limit = self.config.minutes
        if limit is None:
            return False
        late = torch.tensor(
            float(time.perf_counter() - self.started > limit * 60), device=self.fabric.device
        )
        return bool(self.fabric.broadcast(late, src=0).item())

    def _reset_optimizer(self) -> None:
        assert self.state is not None
        for learner in self.state.learners:
            inner = getattr(learner.optimizer, "optimizer", learner.optimizer)
            if isinstance(inner, torch.optim.Optimizer):
                inner.state.clear()

    def _phase(self, label: str, quiet: bool = False) -> Phase:
        console = self.console if self.main else None
        say = self._say if self.main else lambda _: None
        return Phase(label, say, console, self.display, quiet=quiet)

    def _say(self, text: str) -> None:
        if self.main and self.console is not None:
            self.console.print(text)
