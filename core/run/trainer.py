"""A training run, on Lightning Fabric: the loop around the iteration.

    the plan (core/plan/plan.py) -> build the parts by name (core/plan/build.py) -> the run
    folder -> set the learner up: adapters, device, cold start, optimiser, reference
    (model_setup.py) -> resume from the newest checkpoint (folder/resume.py), or start the league
    -> each iteration (core/train/loop.py), then the hooks: the run's own duties first
       (core/run/duties/: the episode log, evaluations, the metrics row, the display, the
       weight average's hand-over), then the users' callbacks, then checkpoints (with what a
       callback did at the iteration's end), the league's tables, plots

Fabric owns devices, precision, the DDP / DeepSpeed strategies, checkpoint I/O and loggers;
the loop itself is ours. Process 0 alone writes the run folder. Plug-ins see the run through
a `RunView`, never through the trainer.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import lightning as L
import torch
from rich.markup import escape

from selfplay.api.errors import ConfigError
from selfplay.core.config import RunConfig
from selfplay.core.machine.hardware import (
    build_fabric,
    core_split,
    frozen_heap,
    quiet_libraries,
    set_threads,
    thread_split,
)
from selfplay.core.machine.processes import Processes
from selfplay.core.plan.plan import RunPlan, plan
from selfplay.core.run import faults
from selfplay.core.run.assembly import Assembly, Parts
from selfplay.core.run.display import RunDisplay
from selfplay.core.run.duties.duty import TrainResult
from selfplay.core.run.duties.roster import run_duties
from selfplay.core.run.folder import resume
from selfplay.core.run.folder.run_folder import open_run_folder, resumed_settings
from selfplay.core.run.progress import Phase
from selfplay.core.run.trackers import Trackers, check_loggers
from selfplay.core.serving.backend import Backend, check_rollout_servers
from selfplay.core.train.loop import Iteration
from selfplay.core.train.rollouts import Rollouts
from selfplay.core.train.state import RunState


def train(config: RunConfig, console: Any = None) -> TrainResult:
    quiet_libraries()
    planned = plan(config)  # the recipe's settings under the user's, each objective built once
    config = planned.config
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
    return Trainer(fabric, planned, console, (worker_threads, cores)).run()


class Trainer:
    def __init__(
        self,
        fabric: L.Fabric,
        planned: RunPlan,
        console: Any = None,
        workers: tuple[int, list[list[int]] | None] = (0, None),
    ) -> None:
        self.workers = workers  # each local rollout worker's threads and cores (None: any)
        config = planned.config
        self.fabric, self.plan, self.config, self.console = fabric, planned, config, console
        self.processes = Processes(fabric, trim=config.hardware.malloc_trim)
        self.main = self.processes.main
        torch.manual_seed(config.seed)
        self.parts = Parts.build(planned)
        check_rollout_servers(config, fabric.world_size)
        check_loggers(config.loggers, config.logger_options)  # before the run folder is made
        self.folder = open_run_folder(config, self.main)
        # what a resume leg changed (its total, its time limit, ...): config.yaml records it
        # once the leg goes on, and a stop's resume command repeats it
        self.given = resumed_settings(config, self.folder)
        self.display: Any = None  # the run's bar, while it shows
        self.trackers = Trackers(self.folder, config) if self.folder else None
        self.state: RunState | None = None  # once the learner is set up
        self.shared: Path | None = None  # the run folder, as every process knows it
        self.looping = False  # whether the iterations began: a stop then keeps a checkpoint
        self.backend: Backend | None = None  # the served rollouts' servers, when served
        self.rollouts: Rollouts | None = None

    # ---- set-up ----------------------------------------------------------------------------

    def _set_up(self, resuming: bool) -> RunState:
        """The run's state (core/run/assembly.py), where the run folder and servers are."""
        assemble = Assembly(
            config=self.config,
            parts=self.parts,
            fabric=self.fabric,
            processes=self.processes,
            folder=self.folder.path if self.folder else None,
            say=self._say,
            phase=self._phase,
            reset_optimizer=self._reset_optimizer,
            workers=self.workers,
            console=self.console,
        )
        made = assemble(resuming)
        self.shared, self.backend = made.shared, made.backend
        return made.state

    # ---- the run ---------------------------------------------------------------------------

    def run(self) -> TrainResult:
        """Train; a faulty plug-in or a failed write stops the run, saying what it keeps."""
        with faults.stopping(self.trackers, self._kept_in, self.given):
            try:
                return self._train()
            finally:
                if self.rollouts is not None:
                    self.rollouts.close()
                if self.backend is not None:
                    self.backend.close()

    def _train(self) -> TrainResult:
        """The loop alone: the run's duties (core/run/duties/) and the users' callbacks do the
        rest, on the same hooks: the duties first, the users' callbacks, then the checkpoint
        and what follows it (core/run/duties/roster.py)."""
        config = self.config
        state, start, iterate = self._start()
        result = TrainResult(self.folder)
        assert self.shared is not None
        before, after = run_duties(
            state,
            result,
            folder=self.folder,
            shared=self.shared,
            fabric=self.fabric,
            display=self.display,
            trackers=self.trackers,
            started=self.started,
            phase=self._phase,
            say=self._say,
        )
        duties = [*before, *after]
        hooks = [*before, *(callback for _, callback in state.callbacks), *after]
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
        banner = (self.plan.recipe_line, self.plan.recipe_notes)
        self.display = RunDisplay(config, self.folder, self.console, self.main, banner)
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
        if config.resume and self.folder and self.main:
            trains = [learner.config.train for learner in self.plan.learners]
            for note in resume.schedule_notes(self.folder, start, trains, config.iterations):
                self._say(f"[yellow]note:[/yellow] {escape(note)}")
        if self.given and self.folder:  # config.yaml says what the run now is
            self.folder.write_config(config)
        sync = self.backend.sync if self.backend is not None else None
        self.rollouts = Rollouts(state, self.processes, self._phase, self._say, sync)
        self.rollouts.start(version=start)  # served: the servers get the weights we start from
        return state, start, Iteration(state, self.processes, self._phase, self._say, self.rollouts)

    # ---- pieces ----------------------------------------------------------------------------

    def _kept_in(self) -> Path | None:
        """The run folder a stop keeps work in: once the iterations began, None before."""
        return self.shared if self.looping else None

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
