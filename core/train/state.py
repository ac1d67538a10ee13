"""What a run trains with, as one typed record.

`RunState` holds every part an iteration works with — the game, the learner and its model,
optimiser and reference, the sampler, the rewards, the estimator, the objective, the league,
the callbacks, the random generators and the counters — and says what a checkpoint keeps of
them (``state_dict``, in Lightning Fabric's style: the model and the optimiser go in as
objects, Fabric saves and loads them; everything else is plain data). The run
(core/run/trainer.py) builds it; the iteration (core/train/loop.py), resume, faults and the
run's checks take it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from selfplay.api.callback import Callback
from selfplay.api.game import Game
from selfplay.api.run_view import RunView
from selfplay.api.sampler import LEARNER, OpponentSampler
from selfplay.core.config import RunConfig
from selfplay.core.league.league import League
from selfplay.core.league.seating import Seats
from selfplay.core.train.learners import Learner


@dataclass
class Progress:
    """Counters that a checkpoint carries besides the model and optimiser."""

    iteration: int = 0
    episodes_bytes: int = 0
    seconds: float = 0.0  # training time up to ``iteration``, over every process that ran it
    before: dict[str, dict[str, Any]] = field(default_factory=dict)
    before_tasks: dict[str, float] = field(default_factory=dict)


@dataclass
class RunState:
    """Every part of a run that an iteration uses or a checkpoint keeps.

    ``learners`` are the policies being trained (core/train/learners.py): one shared policy,
    or one per group of roles."""

    config: RunConfig
    game: Game
    learners: list[Learner]
    sampler: OpponentSampler
    reward: Any  # the reward pipeline (core/reward_pipeline.py): called, bound, checkpointed
    callbacks: list[tuple[str, Callback]]
    rng: random.Random
    generator: torch.Generator
    seats: Seats
    league: League
    view: RunView
    progress: Progress = field(default_factory=Progress)

    @property
    def first(self) -> Learner:
        return self.learners[0]

    @property
    def shared(self) -> bool:
        """Whether one shared policy plays every role (no learners named)."""
        return len(self.learners) == 1 and self.learners[0].name == LEARNER

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of the run (the checkpoint adds each model, whole or its
        adapters, the reference and the config's hash: core/run/folder/resume.py). A run of several
        learners keeps each one's entries under ``learners/NAME`` and its optimiser at the top
        level as ``optimizer/NAME`` (where Fabric saves objects)."""
        state: dict[str, Any] = {
            "sampler": self.sampler.state_dict(),
            "league": self.league.state_dict(),
            "reward": self.reward.state_dict(),
            "callbacks": {name: callback.state_dict() for name, callback in self.callbacks},
            "rng": rng_state(self.rng, self.generator),
            "progress": self.progress.__dict__.copy(),
        }
        if self.shared:
            return {"optimizer": self.first.optimizer, **_learner_state(self.first), **state}
        for learner in self.learners:
            state[f"optimizer/{learner.name}"] = learner.optimizer
            state[f"learners/{learner.name}"] = _learner_state(learner)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back what `state_dict` kept (the models and optimisers are loaded by Fabric).
        Entries added since the first release are optional, so older checkpoints load."""
        if self.shared:
            _load_learner_state(self.first, state)
        else:
            for learner in self.learners:
                _load_learner_state(learner, state[f"learners/{learner.name}"])
        self.sampler.load_state_dict(state["sampler"])
        self.league.load_state_dict(state["league"])
        self.reward.load_state_dict(state["reward"])
        saved_callbacks = state.get("callbacks", {})
        for name, callback in self.callbacks:
            if name in saved_callbacks:
                callback.load_state_dict(saved_callbacks[name])
        restore_rng(state["rng"], self.rng, self.generator)
        self.progress = Progress(**state["progress"])


def _learner_state(learner: Learner) -> dict[str, Any]:
    updater = learner.updater
    return {
        "estimator": learner.estimator.state_dict(),
        "objective": learner.objective.state_dict(),
        "nonfinite_streak": updater.nonfinite_streak,
        "weight_average": updater.average.state_dict() if updater.average else {},
    }


def _load_learner_state(learner: Learner, state: dict[str, Any]) -> None:
    learner.reference.load_state_dict(state)
    learner.estimator.load_state_dict(state["estimator"])
    learner.objective.load_state_dict(state.get("objective", {}))
    learner.updater.nonfinite_streak = state["nonfinite_streak"]
    if learner.updater.average is not None:
        learner.updater.average.load_state_dict(state.get("weight_average") or {})


def rng_state(run_rng: random.Random, generator: torch.Generator) -> dict[str, Any]:
    return {
        "run": run_rng.getstate(),
        "python": random.getstate(),
        "numpy": _numpy_state(),
        "torch": torch.get_rng_state(),
        "update": generator.get_state(),
    }


def restore_rng(state: dict[str, Any], run_rng: random.Random, generator: torch.Generator) -> None:
    run_rng.setstate(state["run"])
    random.setstate(state["python"])
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    generator.set_state(state["update"])


def _numpy_state() -> tuple[Any, ...]:
    # plain Python values: checkpoints load with torch.load(weights_only=True)
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return name, keys.tolist(), int(pos), int(has_gauss), float(cached)
