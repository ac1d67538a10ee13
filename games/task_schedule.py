"""What a seed-based proposer game asks for next: requested difficulty, seed pool, curriculum.

Three mechanisms of the proposer/solver/judge write-up, kept on the game object so that
``reset`` stays a pure function of (schedule, seed):

- difficulty: `BandController` (the Elo curriculum's band) multiplies the requested difficulty
  by 1.2 when the solver won more than 70% of last iteration's decided matches, by 0.8 under
  30%; it is clamped to ``[min_difficulty, max_difficulty]``;
- seed injection: training starts from ``initial_fraction`` of the bank's training problems;
  every ``inject_every`` iterations ``inject_fraction`` (5%) of the bank joins as fresh seeds;
- curriculum: a seed's level is drawn with weight P0(level)·max(1 − p(level), floor), where
  P0 favours levels near the requested difficulty (`PassRateCurriculum`).

The schedule is updated after each iteration by the ``task-schedule`` callback (enable it
with ``--set callbacks=[task-schedule]``), from the iteration's matches. The loop's
checkpoints do not hold callback state, so the callback appends the schedule to
``task_schedule.jsonl`` in the run folder after every iteration and, on resume, reloads the
entry of the checkpoint's iteration: a resumed run asks for exactly what it would have.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selfplay.api.callback import Callback
from selfplay.api.types import Episode
from selfplay.games.banks import Problem
from selfplay.games.curriculum import PassRateCurriculum
from selfplay.opponents.elo import BandController
from selfplay.plugins.hookspecs import hookimpl

SCHEDULE_FILE = "task_schedule.jsonl"


class TaskSchedule:
    """The mutable part of a seed-based proposer game; JSON state round-trips."""

    def __init__(
        self,
        problems: Sequence[Problem],
        difficulty: float = 1.0,
        initial_fraction: float = 0.5,
        inject_every: int = 10,
        inject_fraction: float = 0.05,
        floor: float = 0.05,
        min_difficulty: float = 0.5,
        max_difficulty: float = 5.0,
        seed: int = 0,
    ) -> None:
        if not problems:
            raise ValueError("a task schedule needs at least one seed problem.")
        self.order = sorted(problems, key=lambda p: p.id)
        random.Random(f"selfplay-seeds-{seed}").shuffle(self.order)
        self.active = max(1, math.ceil(initial_fraction * len(self.order)))
        self.inject_every, self.inject_fraction = inject_every, inject_fraction
        self.min_difficulty, self.max_difficulty = min_difficulty, max_difficulty
        self.difficulty = difficulty
        self.controller = BandController()
        self.curriculum = PassRateCurriculum(floor)

    def pool(self) -> list[Problem]:
        return self.order[: self.active]

    def prior(self, levels: Sequence[str]) -> dict[str, float]:
        """P0(level): highest at the level nearest the requested difficulty."""
        return {level: math.exp(-abs(int(level) - self.difficulty)) for level in levels}

    def choose(self, rng: random.Random) -> Problem:
        pool = self.pool()
        levels = sorted({str(p.level) for p in pool})
        level = self.curriculum.sample(levels, rng, self.prior(levels))
        return rng.choice([p for p in pool if str(p.level) == level])

    def after_iteration(self, iteration: int, episodes: Sequence[Episode]) -> None:
        decided = [ep for ep in episodes if not ep.state.get("void") and ep.state.get("final")]
        for ep in decided:
            self.curriculum.record(str(ep.state["level"]), ep.state.get("verdict") == "pass")
        if decided:
            wins = sum(ep.state.get("verdict") == "pass" for ep in decided) / len(decided)
            wanted = self.controller.adjust(self.difficulty, wins)
            self.difficulty = min(max(wanted, self.min_difficulty), self.max_difficulty)
        if self.inject_every and iteration % self.inject_every == 0:
            fresh = math.ceil(self.inject_fraction * len(self.order))
            self.active = min(len(self.order), self.active + fresh)

    def state_dict(self) -> dict[str, Any]:
        return {
            "difficulty": self.difficulty,
            "active": self.active,
            "curriculum": self.curriculum.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.difficulty = float(state["difficulty"])
        self.active = int(state["active"])
        self.curriculum.load_state_dict(state["curriculum"])


class TaskScheduleCallback(Callback):
    """Feeds each iteration's matches to ``trainer.game.schedule`` and keeps it resumable.

    Every process sees every process's matches, so each updates its own copy identically;
    process 0 appends the state to the run folder's ``task_schedule.jsonl``.
    """

    def on_train_start(self, trainer: Any) -> None:
        self.schedule = _schedule_of(trainer.game)
        saved = _saved_state(trainer.config.resume, trainer.progress.iteration)
        if saved is not None:
            self.schedule.load_state_dict(saved)

    def on_iteration_metrics(
        self, trainer: Any, iteration: int, episodes: list[Any], row: dict[str, Any]
    ) -> None:
        self.schedule.after_iteration(iteration, episodes)
        if trainer.folder is not None:
            line = json.dumps({"iteration": iteration, "state": self.schedule.state_dict()})
            with (trainer.folder.path / SCHEDULE_FILE).open("a", encoding="utf-8") as f:
                f.write(line + "\n")
        row["task/difficulty"] = self.schedule.difficulty
        row["task/seed_pool"] = self.schedule.active


def _schedule_of(game: Any) -> TaskSchedule:
    schedule = getattr(game, "schedule", None)
    if not isinstance(schedule, TaskSchedule):
        raise ValueError(
            f"The task-schedule callback needs a game with a task schedule "
            f"(proposer-solver-judge); {game.name!r} has none: remove the callback."
        )
    return schedule


def _saved_state(folder: Path | None, iteration: int) -> dict[str, Any] | None:
    """The schedule saved after ``iteration`` (the checkpoint's) in a resumed run, if any."""
    path = Path(folder) / SCHEDULE_FILE if folder is not None else None
    if path is None or not path.exists() or iteration == 0:
        return None
    state = None
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["iteration"] <= iteration:
            state = record["state"]
    return state


@hookimpl
def register_callbacks(register):
    register("task-schedule", TaskScheduleCallback)
