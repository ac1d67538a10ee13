"""The ``task-schedule`` callback: feeds each iteration's matches to the game's task schedule.

A seed-based proposer game (``proposer-solver-judge``) keeps a schedule of what it asks for
next: the requested difficulty, the active seed pool and a pass-rate curriculum (see
``selfplay.games.proposers.task_schedule``). This callback updates it after every iteration
from every process's matches, so each process's copy stays identical, logs
``task/difficulty``, ``task/seed_pool``, the last iteration's ``task/solver_win_rate``, the
proposer's and the solver's Elo ratings (``task/elo/proposer``, ``task/elo/solver``) and the
solver's expected score from them (``task/elo/solver_expects``), and carries the schedule's
state in the run's checkpoints, so a resumed run asks for exactly what it would have.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from selfplay.api.callback import Callback
from selfplay.api.errors import ConfigError

# Where wave-1 runs kept the schedule (before callbacks had checkpoint state); read on resume
# of such a run when its checkpoint holds no schedule.
LEGACY_FILE = "task_schedule.jsonl"


@runtime_checkable
class Schedule(Protocol):
    difficulty: float
    active: int

    def after_iteration(self, iteration: int, episodes: Sequence[Any]) -> None: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class TaskScheduleCallback(Callback):
    """Updates the game's task schedule after every iteration and keeps it resumable."""

    name = "task-schedule"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.schedule: Schedule | None = None
        self.saved: dict[str, Any] | None = None

    def on_train_start(self, view: Any) -> None:
        self.schedule = schedule_of(view.game)
        saved = self.saved
        if saved is None and view.resumed:
            saved = _legacy_state(view.folder, view.iteration)
        if saved is not None:
            self.schedule.load_state_dict(saved)

    def on_iteration_metrics(self, view: Any, episodes: Sequence[Any], row: dict) -> None:
        assert self.schedule is not None
        self.schedule.after_iteration(view.iteration, episodes)
        metrics = getattr(self.schedule, "metrics", None)
        if metrics is not None:
            row.update(metrics())
        else:  # a schedule of another game's that keeps no ratings
            row["task/difficulty"] = self.schedule.difficulty
            row["task/seed_pool"] = self.schedule.active

    def state_dict(self) -> dict[str, Any]:
        return {} if self.schedule is None else {"schedule": self.schedule.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.saved = state.get("schedule")


def schedule_of(game: Any) -> Schedule:
    schedule = getattr(game, "schedule", None)
    if not isinstance(schedule, Schedule):
        raise ConfigError(
            f"The task-schedule callback needs a game with a task schedule "
            f"(proposer-solver-judge); {game.name!r} has none: remove the callback."
        )
    return schedule


def _legacy_state(folder: Path | None, iteration: int) -> dict[str, Any] | None:
    """The schedule a wave-1 run saved after ``iteration`` in its side file, if any."""
    path = Path(folder) / LEGACY_FILE if folder is not None else None
    if path is None or not path.exists() or iteration == 0:
        return None
    state = None
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["iteration"] <= iteration:
            state = record["state"]
    return state
