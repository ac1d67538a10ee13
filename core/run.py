"""`selfplay run`: build the pieces of a run from its config and play self-play iterations.

Each iteration the opponent sampler fills the non-learner seats, the rollout engine plays the
matches in lock-step, the reward scores them, and the run folder records everything:
``config.yaml`` (the resolved config), ``episodes.jsonl`` (every match) and ``metrics.csv``.
"""

from __future__ import annotations

import csv
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from selfplay.core.build import Seats, build_game, build_learner, build_reward, build_sampler
from selfplay.core.config import ConfigError, RunConfig
from selfplay.core.policy import Policy
from selfplay.core.rollout import play, write_episodes
from selfplay.core.stats import results_for, role_outcomes
from selfplay.core.types import Episode, Role
from selfplay.games.base import Game
from selfplay.opponents.base import LEARNER, OpponentSampler


@dataclass
class RunFolder:
    path: Path

    @property
    def episodes(self) -> Path:
        return self.path / "episodes.jsonl"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.csv"

    def write_config(self, config: RunConfig) -> None:
        data = config.model_dump(mode="json")
        (self.path / "config.yaml").write_text(yaml.safe_dump(data, sort_keys=False))

    def append_metrics(self, row: dict[str, Any]) -> None:
        new = not self.metrics.exists()
        with self.metrics.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(row))
            if new:
                writer.writeheader()
            writer.writerow(row)


def make_run_folder(config: RunConfig) -> RunFolder:
    name = config.name or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = Path(config.out) / name
    if path.exists() and any(path.iterdir()):
        raise ConfigError(
            f"Run folder {path} already exists and is not empty; choose another --name or --out."
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"Cannot create the run folder {path}: {err.strerror}.") from None
    return RunFolder(path)


def seat_matches(
    game: Game, sampler: OpponentSampler, seats: Seats, rng: random.Random, n: int
) -> tuple[list[dict[Role, Policy]], list[int]]:
    """Seatings and seeds for ``n`` matches; the learner's own seat rotates over the roles."""
    seatings, seeds = [], []
    for i in range(n):
        learner_role = game.roles[i % len(game.roles)]
        seating = {}
        for role in game.roles:
            holder = LEARNER if role == learner_role else sampler.sample([LEARNER], rng)
            seating[role] = seats.policy(holder)
        seatings.append(seating)
        seeds.append(rng.randrange(2**31))
    return seatings, seeds


def iteration_metrics(
    iteration: int, episodes: Sequence[Episode], learner: Policy, seconds: float
) -> dict[str, Any]:
    results = results_for(learner.name, episodes)
    tokens = sum(len(t.token_ids) for ep in episodes for t in ep.turns)
    row: dict[str, Any] = {
        "iteration": iteration,
        "matches": len(episodes),
        "learner_win_rate": round(results.win_rate, 4),
        "learner_non_loss_rate": round(results.non_loss_rate, 4),
        "invalid_rate": round(results.invalid_rate, 4),
        "mean_turns": round(results.mean_turns, 3),
        "tokens_per_s": round(tokens / seconds, 1) if seconds > 0 else 0.0,
        "seconds": round(seconds, 3),
    }
    row.update({k: round(v, 4) for k, v in sorted(role_outcomes(episodes).items())})
    return row


def run(config: RunConfig, console: Any = None) -> list[dict[str, Any]]:
    """Play ``config.iterations`` iterations; returns the metrics rows."""
    from selfplay.core.progress import RunDisplay

    game = build_game(config)
    sampler = build_sampler(config)
    reward = build_reward(config)
    learner = build_learner(config)
    learner.name = LEARNER
    folder = make_run_folder(config)
    folder.write_config(config)
    seats = Seats(learner, game)
    rng = random.Random(config.seed)
    rows = []
    with RunDisplay(config, folder.path, console) as display:
        for iteration in range(1, config.iterations + 1):
            seatings, seeds = seat_matches(game, sampler, seats, rng, config.matches)
            start = time.perf_counter()
            episodes = play(game, seatings, seeds)
            row = iteration_metrics(iteration, episodes, learner, time.perf_counter() - start)
            scores = reward(episodes)
            row["mean_reward"] = round(_mean_learner_score(episodes, scores), 4)
            sampler.update(episodes)
            write_episodes(folder.episodes, episodes)
            folder.append_metrics(row)
            rows.append(row)
            display.update(row)
    return rows


def _mean_learner_score(episodes: Sequence[Episode], scores: Sequence[dict]) -> float:
    values = [
        score
        for ep, per_role in zip(episodes, scores, strict=True)
        for role, score in per_role.items()
        if score is not None and ep.seats.get(role) == LEARNER
    ]
    return sum(values) / len(values) if values else 0.0
