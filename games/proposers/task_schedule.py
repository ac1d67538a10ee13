"""What a seed-based proposer game asks for next: requested difficulty, seed pool, curriculum.

Three mechanisms of the proposer/solver/judge write-up, kept on the game object so that
``reset`` stays a pure function of (schedule, seed):

- difficulty: `BandController` (the Elo curriculum's band) multiplies the requested difficulty
  by 1.2 when the solver won more than 70% of last iteration's decided matches, by 0.8 under
  30%; it is clamped to ``[min_difficulty, max_difficulty]``. Seed 004 states the rule as Elo
  ratings: a proposer and a solver rating (`EloPair`) move after every decided match and are
  logged either way; with ``signal="elo"`` the band reads the solver's expected score from
  them instead of the raw win rate, so one small or lucky batch moves the difficulty less;
- seed injection: training starts from ``initial_fraction`` of the bank's training problems;
  every ``inject_every`` iterations ``inject_fraction`` (5%) of the bank joins as fresh seeds;
- curriculum: a seed's level is drawn with weight P0(level)·max(1 − p(level), floor), where
  P0 favours levels near the requested difficulty (`PassRateCurriculum`).

The schedule is updated after each iteration by the ``task-schedule`` callback (enable it
with ``--set callbacks=[task-schedule]``; selfplay.monitors.task_schedule), from the
iteration's matches; its state is part of every checkpoint.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Literal

from selfplay.api.ratings import BandController, EloPair
from selfplay.api.types import Episode
from selfplay.games.banks import Problem
from selfplay.games.proposers.curriculum import PassRateCurriculum


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
        signal: Literal["win_rate", "elo"] = "win_rate",
        elo_k: float = 16.0,
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
        if signal not in ("win_rate", "elo"):
            raise ValueError(f"the band's signal is win_rate or elo, got {signal!r}.")
        self.signal = signal
        self.elo = EloPair(k=elo_k)
        self.win_rate: float | None = None  # the last iteration's, of its decided matches

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
            solved = ep.state.get("verdict") == "pass"
            self.curriculum.record(str(ep.state["level"]), solved)
            self.elo.record(solved)
        if decided:
            wins = sum(ep.state.get("verdict") == "pass" for ep in decided) / len(decided)
            self.win_rate = wins
            read = self.elo.solver_expects() if self.signal == "elo" else wins
            wanted = self.controller.adjust(self.difficulty, read)
            self.difficulty = min(max(wanted, self.min_difficulty), self.max_difficulty)
        if self.inject_every and iteration % self.inject_every == 0:
            fresh = math.ceil(self.inject_fraction * len(self.order))
            self.active = min(len(self.order), self.active + fresh)

    def state_dict(self) -> dict[str, Any]:
        return {
            "difficulty": self.difficulty,
            "active": self.active,
            "curriculum": self.curriculum.state_dict(),
            "elo": self.elo.state_dict(),
            "win_rate": self.win_rate,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.difficulty = float(state["difficulty"])
        self.active = int(state["active"])
        self.curriculum.load_state_dict(state["curriculum"])
        if "elo" in state:  # checkpoints written before the ratings start them afresh
            self.elo.load_state_dict(state["elo"])
        self.win_rate = state.get("win_rate")

    def metrics(self) -> dict[str, float]:
        """What the ``task-schedule`` callback logs after each iteration."""
        row = {
            "task/difficulty": self.difficulty,
            "task/seed_pool": float(self.active),
            "task/elo/proposer": float(self.elo.setter or 0.0),
            "task/elo/solver": float(self.elo.solver or 0.0),
            "task/elo/solver_expects": self.elo.solver_expects(),
        }
        if self.win_rate is not None:
            row["task/solver_win_rate"] = self.win_rate
        return row
