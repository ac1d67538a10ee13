"""The run's state, assembled from its parts before the first iteration.

the parts, built by name and checked (`Parts`: the game, the sampler, the rewards, the
callbacks, the learners) -> each learner set up (core/run/model_setup.py: adapters,
device, cold start, optimiser, reference) -> the rewards bound to their models -> where
the learners' turns are played (in this process, or on rollout servers) -> the seats, the
view plug-ins get, the league -> `RunState`
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from rich.markup import escape

from selfplay.api.callback import Callback
from selfplay.api.game import Game
from selfplay.api.reward import RewardContext
from selfplay.api.run_view import RunView
from selfplay.api.sampler import OpponentSampler, learner_seat
from selfplay.core.config import RunConfig
from selfplay.core.config.learners import served
from selfplay.core.league.league import League
from selfplay.core.league.seating import Seats
from selfplay.core.league.snapshots import snapshot_store
from selfplay.core.machine.hardware import thread_split
from selfplay.core.machine.processes import Processes
from selfplay.core.models.loading import hub_folder
from selfplay.core.models.reward_models import RewardModels
from selfplay.core.plan.build import (
    build_callbacks,
    build_game,
    build_reward,
    build_sampler,
)
from selfplay.core.plan.checks import check_parts
from selfplay.core.plan.ownership import reads
from selfplay.core.plan.plan import RunPlan
from selfplay.core.run.model_setup import build_learners, prepare_learner
from selfplay.core.serving.backend import Backend, served_backend
from selfplay.core.train.learners import Learner, LearnerParts, policies
from selfplay.core.train.state import RunState


@dataclass
class Parts:
    """The run's plug-ins and learner, built by name and checked before any work."""

    game: Game
    sampler: OpponentSampler
    reward: Any  # the reward pipeline (core/reward_pipeline.py)
    callbacks: list[tuple[str, Callback]]
    learners: list[LearnerParts]  # the shared policy, or one per group of roles

    @classmethod
    def build(cls, planned: RunPlan) -> Parts:
        config = planned.config
        game = build_game(config)
        sampler = build_sampler(config, game)
        reward = build_reward(config, game)
        callbacks = build_callbacks(config)
        check_parts(config, game, reward.models)
        learners = build_learners(planned, game)
        return cls(game, sampler, reward, callbacks, learners)


@dataclass
class Assembled:
    state: RunState
    shared: Path  # the run folder, as every process knows it
    backend: Backend | None  # the served rollouts' servers, when served


@dataclass
class Assembly:
    """What assembling the state needs of the run around it (the trainer's, never itself)."""

    config: RunConfig
    parts: Parts
    fabric: Any
    processes: Processes
    folder: Path | None  # process 0's run folder
    say: Callable[[str], None]
    phase: Callable[..., Any]
    reset_optimizer: Callable[[], None]
    workers: tuple[int, list[list[int]] | None]  # local rollout workers' threads and cores
    console: Any = None

    def __call__(self, resuming: bool) -> Assembled:
        config, parts = self.config, self.parts
        learners = [self._prepare(learner, resuming) for learner in parts.learners]
        first = learners[0]
        models = RewardModels(config, first.policy, first.reference, learners)
        shown = lambda label: self.phase(label, quiet=True)  # noqa: E731
        device = str(self.fabric.device)
        context = RewardContext(parts.game, models, device, models.measure, shown, hub_folder)
        parts.reward.bind(context)
        for line in parts.reward.notices():
            self.say(f"[yellow]note:[/yellow] {escape(line)}")
        path = self.folder or config.resume or config.out
        shared = Path(self.processes.broadcast(path))
        store = snapshot_store(config, learners, shared / "pool", self.processes.main)
        seat, several, backend = self._seats(shared, learners)
        owners = {role: learner.seat for learner in learners for role in learner.roles}
        owners = owners if several else {}
        seats = Seats(seat, parts.game, snapshots=store, learners=several, owners=owners)
        view = self._view(seats, several, resuming)
        state = RunState(
            config=config,
            game=parts.game,
            learners=learners,
            sampler=parts.sampler,
            reward=parts.reward,
            callbacks=parts.callbacks,
            rng=random.Random(config.seed),
            generator=torch.Generator().manual_seed(config.seed),
            seats=seats,
            league=League(view, seats, store),
            view=view,
        )
        return Assembled(state, shared, backend)

    def _prepare(self, learner: LearnerParts, resuming: bool) -> Learner:
        """Set ``learner`` up, with a KL reference when anything reads one."""
        train, objective = learner.config.train, learner.objective
        kl = "kl_coef" in reads(objective)  # the objective's own KL, if scheduled
        kl_coef = objective.shared("kl_coef")  # as the plan built it
        wanted = (
            (kl and (kl_coef > 0 or train.kl_coef_step > 0))
            or objective.wants_reference()
            or any(name.partition(":")[0] == "reference" for name in self.parts.reward.models)
        )
        console = self.console if self.processes.main else None
        game, say = self.parts.game, self.say
        return prepare_learner(
            self.fabric, self.processes, learner, game, wanted, resuming, say, console
        )

    def _seats(
        self, shared: Path, learners: list[Learner]
    ) -> tuple[Any, dict[str, Any], Backend | None]:
        """The learner's seat, each learner's (several), and the rollout servers, if served."""
        config = self.config
        seat = learners[0].policy
        several = policies(learners) if config.learners else {}
        if not served(config):
            return seat, several, None
        threads, cores = self.workers  # the learners' turns on rollout servers (core/serving/)
        threads = threads or thread_split(config)[1]
        backend = served_backend(config, learners, shared, threads, self.say, cores)
        several = {learner_seat(n): p for n, p in backend.learners.items()} if several else {}
        return backend.learner, several, backend

    def _view(self, seats: Seats, several: dict[str, Any], resuming: bool) -> RunView:
        """What plug-ins see of the run."""
        return RunView(
            config=self.config,
            game=self.parts.game,
            learner=self.parts.learners[0].policy,
            sampler=self.parts.sampler,
            folder=self.folder,
            resumed=resuming,
            is_main=self.processes.main,
            rank=self.processes.rank,
            world_size=self.processes.world_size,
            policy=seats.policy,
            barrier=self.fabric.barrier,
            say=self.say,
            reset_optimizer=self.reset_optimizer,
            learners=several,
        )
