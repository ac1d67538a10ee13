"""`selfplay eval --suite NAME`: a registered evaluation suite run on any policy.

    selfplay eval --suite solver RUN_DIR|CHECKPOINT     the saved policy
    selfplay eval --suite solver --model tiny          any model --model accepts: a baseline

The host builds the policy, lends the suite a bench (its games, greedy seeded matches against
scripted players, the policy's table), runs it once per seed and reports every figure's mean
over the seeds with its min-max spread and standard deviation; ``--json`` adds each seed's
value. Suites register through the ``register_suites`` hook (api/tasks.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.game import Game
from selfplay.api.policy import Policy, ScriptedPolicy
from selfplay.api.tasks import Suite
from selfplay.api.types import Episode, Role

DEFAULT_SEEDS = (0, 1, 2)


def add_suite_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--suite", metavar="NAME", help="run a registered evaluation suite (e.g. solver)")
    add("--model", metavar="M", help="with --suite: measure this model instead of a run's")
    add("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS), help="with --suite")


def find_suite(name: str) -> Suite:
    from selfplay.plugins.manager import registries

    suites = registries().suites
    if name not in suites:
        known = ", ".join(entry.name for entry in suites) or "none"
        raise ConfigError(f"Unknown suite {name!r}; the known suites are: {known}.")
    return suites.get(name)


class HostBench:
    """The `Bench` a suite receives: greedy, seeded matches as `selfplay eval` plays them."""

    def __init__(
        self,
        policy: Policy,
        temperature: float = 1.0,
        progress: Callable[[int, int, int], None] | None = None,
        config: Any = None,
    ) -> None:
        self.policy, self.temperature, self.progress = policy, temperature, progress
        self.config = config  # the run's settings, when the policy is a run's

    def game(self, name: str) -> Game:
        """The suite's game: with the run's options when the run trained on it (the prompt
        form it learned, e.g. tic-tac-toe's compact board), else with its defaults."""
        from selfplay.core.config import RunConfig
        from selfplay.core.run.build import build_game

        if self.config is not None and self.config.game == name:
            return build_game(RunConfig(game=name, game_options=self.config.game_options))
        return build_game(RunConfig(game=name))

    def matches(
        self, game: Game, opponent: str, matches: int, seed: int
    ) -> list[tuple[Role, Episode]]:
        from selfplay.core.evaluate import eval_seeds
        from selfplay.core.rollout import play, seatings_for

        seatings = seatings_for(game, self.policy, ScriptedPolicy(opponent), matches)
        seeds = eval_seeds(game, matches, seed)
        episodes = play(game, seatings, seeds, greedy=True, progress=self.progress)
        roles = [next(r for r, p in s.items() if p is self.policy) for s in seatings]
        return list(zip(roles, episodes, strict=True))

    def table(self, game: Game) -> dict[str, dict[str, float]] | None:
        from selfplay.core.models.policy_table import is_tabular, policy_table

        if not is_tabular(game) or not hasattr(self.policy, "encode"):
            return None
        return policy_table(self.policy, game, self.temperature)


def spread(values: Sequence[float], seeds: Sequence[int]) -> dict[str, Any]:
    """A figure's mean over the seeds, its min-max, its standard deviation, each seed's value."""
    return {
        "mean": statistics.fmean(values),
        "min": min(values),
        "max": max(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "per_seed": {str(seed): value for seed, value in zip(seeds, values, strict=True)},
    }


def run_suite(
    suite: Suite, bench: Any, seeds: Sequence[int], matches: int, measured: str
) -> dict[str, Any]:
    """The report of ``suite`` on the bench's policy: every figure with its spread."""
    if matches < 2:
        raise ConfigError(f"--matches {matches}: a suite plays both seats; give at least 2.")
    if not seeds:
        raise ConfigError("--seeds: give at least one seed.")
    started = time.perf_counter()
    figures = suite.run(bench, list(seeds), matches)
    return {
        "suite": suite.name,
        "measured": measured,
        "games": list(suite.games),
        "seeds": list(seeds),
        "matches": matches,
        "figures": {name: spread(values, seeds) for name, values in figures.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }


def load_policy(args: argparse.Namespace) -> tuple[Policy, float, str, Any]:
    """(policy, sampling temperature, what it is, the run's config or None) from a
    run/checkpoint folder or --model."""
    if (args.source is None) == (args.model is None):
        raise ConfigError(
            "Name one policy: a run folder or checkpoint folder (selfplay eval --suite solver "
            "runs/NAME), or a model (--model tiny)."
        )
    if args.model is not None:
        from selfplay.core.config import RunConfig
        from selfplay.core.run.build import build_learner

        config = RunConfig(model=args.model)
        policy = build_learner(config)
        if getattr(policy, "model", None) is not None:
            policy.model.eval()
        return policy, config.generation.temperature, f"model {args.model}", None
    from selfplay.core.commands.play import find_checkpoint, load_checkpoint_policy

    _, found = find_checkpoint(Path(args.source))
    loaded = load_checkpoint_policy(Path(args.source), args.learner)
    return loaded.policy, loaded.config.generation.temperature, str(found), loaded.config


def cmd_suite(args: argparse.Namespace) -> int:
    if args.suite is None:
        raise ConfigError(
            "Name what to measure: a run folder or checkpoint (selfplay eval runs/NAME), or a "
            "suite with its policy (selfplay eval --suite solver --model tiny)."
        )
    suite = find_suite(args.suite)
    policy, temperature, measured, config = load_policy(args)
    bench = HostBench(policy, temperature, config=config)
    report = run_suite(suite, bench, args.seeds, args.matches, measured)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        from selfplay.core.commands.show import ReaderConsole

        ReaderConsole().print(suite_table(report))
    return 0


def suite_table(report: dict[str, Any]) -> Any:
    from rich.table import Table

    seeds = " ".join(str(s) for s in report["seeds"])
    title = (
        f"suite {report['suite']}: {report['measured']} "
        f"(seeds {seeds}, {report['matches']} matches each, {report['seconds']:.0f} s)"
    )
    table = Table(title=title)
    for column in ("figure", "mean", "min – max", "std"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for name, figure in report["figures"].items():
        low_high = f"{figure['min']:.3f} – {figure['max']:.3f}"
        table.add_row(name, f"{figure['mean']:.3f}", low_high, f"{figure['std']:.3f}")
    return table
