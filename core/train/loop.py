"""The self-play training loop, on Lightning Fabric.

    each iteration:  seat the matches (opponent sampler) -> play them in lock-step (rollout)
                     -> callbacks screen them -> rewards -> per-turn returns
                     -> advantages (estimator, when the objective needs them)
                     -> the objective's items -> update -> log, evaluate, checkpoint

Fabric owns devices, precision, the DDP / DeepSpeed strategies, checkpoint I/O and loggers;
the loop itself is ours. Every process draws the same seatings and seeds and plays its own
share of the matches; estimator statistics are summed across processes; process 0 alone
writes the run folder. Plug-ins see the run through a `RunView`, never through the trainer.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lightning as L
import torch
import torch.distributed
from rich.markup import escape

from selfplay.api.objective import IterationData
from selfplay.api.run_view import RunView
from selfplay.api.sampler import LEARNER
from selfplay.api.types import Episode
from selfplay.core import faults
from selfplay.core.branching import play_branches
from selfplay.core.commands.plots import plots_at_the_end
from selfplay.core.commands.progress import Phase, RunDisplay
from selfplay.core.config import ConfigError, RunConfig
from selfplay.core.evaluate import EvalResult, evaluate
from selfplay.core.models.best_of import searched_task_metrics
from selfplay.core.models.hub import hub_folder
from selfplay.core.rollout import VoidMatch, play
from selfplay.core.schedules import apply_schedules
from selfplay.core.search_targets import SearchTargets
from selfplay.core.stats import episode_metrics
from selfplay.core.trackers import Trackers, check_loggers
from selfplay.core.train import resume
from selfplay.core.train.build import (
    bound_objective,
    build_callbacks,
    build_estimator,
    build_game,
    build_learner,
    build_reward,
    build_sampler,
    check_players,
    resolve,
)
from selfplay.core.train.episode_log import recorded
from selfplay.core.train.hardware import build_fabric, frozen_heap
from selfplay.core.train.league import League
from selfplay.core.train.model_setup import prepare_learner
from selfplay.core.train.run_folder import RunFolder, open_run_folder
from selfplay.core.train.samples import (
    advantage_metrics,
    check_scored,
    episode_samples,
    finite_advantages,
    finite_samples,
    invalid_return,
    reference_answers,
    untrained_message,
)
from selfplay.core.train.seating import Seats, seat_matches
from selfplay.core.train.snapshots import SnapshotStore


@dataclass
class Progress:
    """Counters that a checkpoint carries besides the model and optimiser."""

    iteration: int = 0
    episodes_bytes: int = 0
    before: dict[str, dict[str, Any]] = field(default_factory=dict)
    before_tasks: dict[str, float] = field(default_factory=dict)


@dataclass
class TrainResult:
    folder: RunFolder | None
    rows: list[dict[str, Any]]
    before: dict[str, EvalResult]
    after: dict[str, EvalResult]


def train(config: RunConfig, console: Any = None) -> TrainResult:
    fabric = build_fabric(config)
    fabric.launch()
    if config.threads:
        torch.set_num_threads(config.threads)
    return Trainer(fabric, config, console).run()


class Trainer:
    def __init__(self, fabric: L.Fabric, config: RunConfig, console: Any = None) -> None:
        config = resolve(config)
        self.fabric, self.config, self.console = fabric, config, console
        self.main = fabric.global_rank == 0
        torch.manual_seed(config.seed)
        self.game = build_game(config)
        self.sampler = build_sampler(config, self.game)
        self.reward = build_reward(config, self.game)
        self.objective = bound_objective(config)
        self.estimator = build_estimator(config)
        self.estimator.bind(self.game.name, self.game.roles)
        self.callbacks = build_callbacks(config)
        check_players(config, self.game)
        self.learner = build_learner(config)
        self.learner.name = LEARNER
        self.search = SearchTargets(self.game, config.train.search_weight, self.learner)
        self.rng = random.Random(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.progress = Progress()
        self.unscored = 0  # iterations in a row in which no learner turn was scored
        check_loggers(config.loggers, config.logger_options)  # before the run folder is made
        self.folder = open_run_folder(config, self.main)
        self.display: Any = None  # the run's bar, while it shows
        self.trackers = Trackers(self.folder, config) if self.folder else None

    # ---- set-up ----------------------------------------------------------------------------

    def _set_up(self, resuming: bool) -> None:
        config = self.config
        wanted = (
            config.train.kl_coef > 0
            or config.train.kl_coef_step > 0
            or self.objective.wants_reference()
            or "reference" in self.reward.models
        )
        ready = prepare_learner(
            self.fabric,
            config,
            self.learner,
            self.game,
            self.objective,
            wanted,
            resuming,
            self._say,
            self.console if self.main else None,
        )
        self.model, self.optimizer = ready.model, ready.optimizer
        self.reference, self.updater = ready.reference, ready.updater
        from selfplay.api.reward import RewardContext
        from selfplay.core.models.reward_models import RewardModels

        models = RewardModels(config, self.learner, self.reference)
        device = str(self.fabric.device)
        shown = lambda label: self._phase(label, quiet=True)  # noqa: E731
        context = RewardContext(self.game, models, device, models.measure, shown, hub_folder)
        self.reward.bind(context)
        for line in self.reward.notices():
            self._say(f"[yellow]note:[/yellow] {escape(line)}")
        path = self.folder.path if self.folder else config.resume or config.out
        self.shared_path = shared = Path(self._shared_folder(path))
        store = SnapshotStore(shared / "pool", self.learner, config.lora.enabled, self.main)
        self.seats = Seats(self.learner, self.game, snapshots=store)
        self.view = RunView(
            config=config,
            game=self.game,
            learner=self.learner,
            sampler=self.sampler,
            folder=self.folder.path if self.folder else None,
            resumed=resuming,
            is_main=self.main,
            rank=self.fabric.global_rank,
            world_size=self.fabric.world_size,
            policy=self.seats.policy,
            barrier=self.fabric.barrier,
            say=self._say,
            reset_optimizer=self._reset_optimizer,
        )
        self.league = League(self.view, self.seats, store)

    # ---- the loop --------------------------------------------------------------------------

    def run(self) -> TrainResult:
        """Train; a faulty plug-in or a failed write stops the run, saying what it keeps."""
        with faults.stopping(self):
            return self._train()

    def _train(self) -> TrainResult:
        found = resume.checkpoints(self) if self.config.resume else None
        resuming = bool(found and found.complete)
        self._set_up(resuming=resuming)
        if resuming:
            resume.restore_newest(self, found)
        elif self.config.resume and self.main and self.folder:
            self.folder.truncate(0, 0)  # it certainly never wrote a checkpoint: start over
        self.looping = True
        start = self.progress.iteration
        if not resuming:
            self.league.start()
        self.started = time.perf_counter()
        if self.config.resume and start >= self.config.iterations:
            raise ConfigError(
                f"{self.config.resume} has already trained {start} iterations; "
                f"--iterations {self.config.iterations} leaves nothing to train. "
                "--iterations is the total: pass a larger one."
            )
        self.display = display = RunDisplay(self.config, self.folder, self.console, self.main)
        with display, frozen_heap():  # the collector skips what setup built (hardware.py)
            before = self._before_eval()
            rows: list[dict[str, Any]] = []
            self.view = self.view.at(start)
            for _, callback in self.callbacks:
                callback.on_train_start(self.view)
            for iteration in range(start + 1, self.config.iterations + 1):
                self.view = self.view.at(iteration)
                row = self.iteration(iteration)
                if self.config.eval.every and iteration % self.config.eval.every == 0:
                    row.update(self._eval_metrics(self.evaluate()))
                for _, callback in self.callbacks:
                    callback.on_iteration_metrics(self.view, self.episodes, row)
                row["elapsed_seconds"] = time.perf_counter() - self.started
                self._log(row)
                rows.append(row)
                display.update(row)
                last = iteration == self.config.iterations or self._out_of_time()
                if last and self.updater.average is not None:
                    self.updater.average.apply()  # the run hands over the average (averaging.py)
                if last or iteration % self.config.checkpoint_every == 0:
                    resume.save(self, iteration)
                for _, callback in self.callbacks:
                    callback.on_iteration_end(self.view, row)
                if last:
                    break
            after = self.evaluate()
            display.summary(before, after, self.progress.before_tasks, self._task_metrics())
            if message := untrained_message(rows, self.folder and self.folder.path):
                self._say(f"[yellow]{escape(message)}[/yellow]")
        if self.main and self.folder:
            plots_at_the_end(self.folder.path, lambda text: self._say(escape(text)))
        if self.trackers is not None:
            self.trackers.finalize("success")
        result = TrainResult(self.folder, rows, before, after)
        for _, callback in self.callbacks:
            callback.on_train_end(self.view, result)
        return result

    def iteration(self, iteration: int) -> dict[str, Any]:
        config, fabric = self.config, self.fabric
        started = time.perf_counter()
        seatings, seeds = seat_matches(
            self.game, self.sampler, self.seats, self.rng, config.matches, self.league.members
        )
        share = slice(fabric.global_rank, None, fabric.world_size)
        voided: list[VoidMatch] = []
        with self._phase("matches", quiet=True) as told:
            played = play(self.game, seatings[share], seeds[share], errors=voided, progress=told)
            where = f"{config.seed}-{iteration}-{fabric.global_rank}"  # names the branches' draw
            branched = play_branches(self.game, played, self.seats.policy, config.branches, LEARNER,
                                     where, voided)  # fmt: skip
        void_row = faults.voided(iteration, voided, len(played), self._sum, self._say)
        finished = time.perf_counter()
        episodes = [*played, *branched]
        for _, callback in self.callbacks:
            episodes = list(callback.on_episodes(self.view, episodes))
        scores = self.reward(episodes, reduce=self._sum)
        samples = episode_samples(episodes, scores, LEARNER, config.train.gamma,
                                  invalid_return(config))  # fmt: skip
        samples = [s for s in samples if self._trains(s.role, iteration)]
        self.unscored = check_scored(iteration, episodes, samples, self.unscored, self)
        samples, nonfinite = finite_samples(samples)
        advantages, bad_advantages = None, 0
        if self.objective.needs == "advantages":
            advantages = self.estimator(samples, reduce=self._sum)
            advantages, bad_advantages = finite_advantages(advantages)
            samples, advantages = self.search.add(episodes, samples, advantages)
        if self.objective.refreshes_reference():
            self.reference.refresh()  # the reference is this iteration's starting policy
        data = IterationData(
            samples,
            advantages,
            episodes,
            encode=self.search.encode,
            reference=reference_answers(self.game, episodes),
            terms=self.reward.labels,
            reduce=self._sum,
        )
        schedule = apply_schedules(config, self.optimizer, self.objective, iteration)
        items = self.objective.prepare(data)
        with self._phase("update", quiet=True) as told:
            told(0, len(items))  # the bar shows the update's clock: samples trained at the end
            stats = self.updater.update(items, self.generator, self._minibatches(len(items)))
        if config.train.reference_update:
            self.reference.pull(config.train.reference_update)
        played = recorded(played, episodes, scores, self.reward.notes(), iteration)
        everyone = self._gather_episodes(played)
        self.episodes = everyone  # the iteration's matches, for on_iteration_metrics
        voided = faults.gather(self.fabric, voided)
        if self.main and self.folder:
            self.folder.append_episodes([*everyone, *voided])
        totals = [s.totals(ep) for ep, s in zip(episodes, scores, strict=True)]
        row = {"iteration": iteration, **episode_metrics(episodes, totals, self._sum)}
        row.update(self.reward.metrics() | stats.means() | schedule)
        row.update(self.objective.iteration_metrics() | self.search.metrics())
        row.update(self.league.after_iteration(iteration, everyone))
        row.update(void_row)
        row.update(faults.nonfinite(iteration, nonfinite, bad_advantages, self._sum, self._say))
        row.update(advantage_metrics(advantages))
        row["rollout_seconds"] = finished - started
        row["update_seconds"] = time.perf_counter() - finished
        return row

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

    def _trains(self, role: str, iteration: int) -> bool:
        return iteration % self.config.train.stagger.get(role, 1) == 0

    def _sum(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.fabric.world_size == 1:
            return tensor
        # NCCL reduces only tensors on the GPU; the statistics live on the CPU
        total = self.fabric.all_reduce(tensor.float().to(self.fabric.device), reduce_op="sum")
        return total.cpu().double()

    def _minibatches(self, count: int) -> int:
        """Optimiser steps this iteration: equal on every process (collective backward)."""
        size = self.config.train.minibatch_size
        fewest = count
        if self.fabric.world_size > 1:
            counts = self.fabric.all_gather(torch.tensor(count, device=self.fabric.device))
            fewest = int(counts.min())
        return 0 if fewest == 0 else -(-fewest // size)

    def _gather_episodes(self, episodes: list[Episode]) -> list[Episode]:
        if self.fabric.world_size == 1:
            return episodes
        gathered: list[Any] = [None] * self.fabric.world_size
        torch.distributed.all_gather_object(gathered, [e.to_dict() for e in episodes])
        return [Episode.from_dict(d) for part in gathered for d in part]

    def _reset_optimizer(self) -> None:
        inner = getattr(self.optimizer, "optimizer", self.optimizer)
        if isinstance(inner, torch.optim.Optimizer):
            inner.state.clear()

    def evaluate(self) -> dict[str, EvalResult]:
        ev, seed = self.config.eval, self.config.seed + 7919
        with self._phase("evaluation") as told, self.updater.averaged():
            return evaluate(self.game, self.learner, opponents=ev.opponents, matches=ev.matches,
                            seed=seed, progress=told)  # fmt: skip

    def _before_eval(self) -> dict[str, EvalResult]:
        if self.progress.before:
            return {k: EvalResult(**v) for k, v in self.progress.before.items()}
        before = self.evaluate()
        self.progress.before = {k: v.__dict__.copy() for k, v in before.items()}
        self.progress.before_tasks = self._task_metrics()
        return before

    def _task_metrics(self) -> dict[str, float]:
        """Held-out accuracy of games with tasks (empty for the others), and best-of-n."""
        seed, ev = self.config.seed + 7919, self.config.eval
        with self._phase("held-out tasks") as told:
            return searched_task_metrics(self.game, self.learner, ev, seed, self.reward, told)

    def _phase(self, label: str, quiet: bool = False) -> Phase:
        console = self.console if self.main else None
        say = self._say if self.main else lambda _: None
        return Phase(label, say, console, self.display, quiet=quiet)

    def _eval_metrics(self, results: dict[str, EvalResult]) -> dict[str, float]:
        row: dict[str, float] = {}
        for result in results.values():
            row.update(result.as_metrics("eval"))
        row.update(self._task_metrics())
        return row

    def _log(self, row: dict[str, Any]) -> None:
        if not (self.main and self.folder):
            return
        self.folder.append_metrics(row)
        self.trackers.log(row)

    def _say(self, text: str) -> None:
        if self.main and self.console is not None:
            self.console.print(text)

    def _shared_folder(self, path: Any) -> Any:
        """Every process needs the run folder's path (only process 0 made it)."""
        return self.fabric.broadcast(path, src=0)
