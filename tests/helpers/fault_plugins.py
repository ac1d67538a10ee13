"""Faulty plug-ins for the fault suite (tests/faults/): each one breaks in one known way.

`run_selfplay.py` registers them as a built-in plugin next to its test callbacks.
"""

from __future__ import annotations

import math
import os
import resource
import signal
from typing import Any, Literal

from pydantic import Field

from selfplay import Reward, hookimpl
from selfplay.api.callback import Callback
from selfplay.api.objective import Loss
from selfplay.api.options import Options
from selfplay.api.reward import RewardOptions
from selfplay.api.sampler import OpponentSampler
from selfplay.api.verifier import Verdict, Verifier
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.games.tictactoe import TicTacToe, TicTacToeOptions


class SpikeOptions(RewardOptions):
    value: Literal["nan", "inf", "-inf"] = "nan"
    every: int = Field(default=2, ge=1, description="Spike in matches whose seed % every == 0.")


class Spike(Reward):
    """A non-finite score for every turn of some matches (seed % every == 0), 0 elsewhere.

    Per turn, so that it reaches invalid attempts too (whose role score is replaced by
    train.invalid_reward), which are most of what a briefly warmed-up tiny model writes.
    """

    name = "test-spike"
    Options = SpikeOptions
    per_turn = True

    def __call__(self, episodes):
        spike = float(self.options.value)
        return [
            [spike if ep.seed % self.options.every == 0 else 0.0 for _ in ep.turns]
            for ep in episodes
        ]


class RaisingOptions(RewardOptions):
    after: int = Field(default=0, ge=0, description="Batches scored before it breaks.")


class RaisingReward(Reward):
    """Scores 0 for ``after`` batches, then raises on every batch."""

    name = "test-raise"
    Options = RaisingOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.calls = 0

    def __call__(self, episodes):
        self.calls += 1
        if self.calls > self.options.after:
            raise ValueError("the test reward broke")
        return [dict.fromkeys(ep.outcome, 0.0) for ep in episodes]


class CheckRaises(Verifier):
    """Its check raises: `verify` turns that into an error verdict, as the contract says."""

    name = "test-check-raises"

    def check(self, candidate, reference, **ctx) -> Verdict:
        raise ZeroDivisionError("the test verifier broke")


class VerifyRaises(CheckRaises):
    """Overrides `verify` itself and raises through it (the reward that calls it breaks)."""

    name = "test-verify-raises"

    def verify(self, candidate, reference, **ctx) -> Verdict:
        raise ZeroDivisionError("the test verifier broke through verify")


class RaisingSampler(OpponentSampler):
    """Raises when asked for an opponent."""

    name = "test-raise"

    def sample(self, members, rng) -> str:
        raise RuntimeError("the test sampler broke")


class FlakyOptions(TicTacToeOptions):
    fail_every: int = Field(default=4, ge=1, description="Break matches with seed % n == 0.")


class FlakyTicTacToe(TicTacToe):
    """Tic-tac-toe whose rules raise at the second request of matches with seed % n == 0."""

    name = "test-flaky"
    Options = FlakyOptions

    def prompt(self, state, role):
        doomed = state.seed % self.options.fail_every == 0
        if doomed and state.turn + state.retries >= 1:
            raise KeyError("the flaky rule broke")
        return super().prompt(state, role)


class NanLoss(PolicyGradient):
    """The policy gradient with every loss made NaN (to test the non-finite-loss stop)."""

    name = "test-nan-loss"

    def loss(self, items, current, reference) -> Loss:
        result = super().loss(items, current, reference)
        return Loss(result.loss * math.nan, result.metrics)


class DiskFull(Callback):
    """Makes every file write beyond 1 byte (or 1 MB) fail, as on a full disk, at one point.

    SELFPLAY_TEST_DISK_FULL=N:POINT, POINT one of: ``episodes`` (before iteration N writes
    its episodes), ``metrics`` (before its metrics row), ``checkpoint`` (room for the metrics
    row, not for the checkpoint). The limit is RLIMIT_FSIZE, so no mount is needed.
    """

    Options = Options

    def _fill(self, view: Any, point: str) -> None:
        iteration, _, where = os.environ.get("SELFPLAY_TEST_DISK_FULL", "").partition(":")
        if where == point and view.iteration == int(iteration):
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a kill
            limit = 1_000_000 if point == "checkpoint" else 1
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    def on_episodes(self, view, episodes):
        self._fill(view, "episodes")
        return episodes

    def on_iteration_metrics(self, view, episodes, row):
        self._fill(view, "metrics")
        self._fill(view, "checkpoint")


class KillPoint(Callback):
    """SELFPLAY_TEST_KILL_AT=N>TARGET: from the start of iteration N, SIGKILL at TARGET
    (see kill_point.py: installed here, at the end of iteration N-1, it counts from the
    start of iteration N); nothing without the variable (so a resume runs through)."""

    def on_iteration_end(self, view, row):
        at, _, target = os.environ.get("SELFPLAY_TEST_KILL_AT", "").partition(">")
        if target and view.iteration == int(at) - 1:
            import kill_point  # beside run_selfplay.py

            kill_point.install(target)


@hookimpl
def register_rewards(register):
    register("test-spike", Spike)
    register("test-raise", RaisingReward)


@hookimpl
def register_verifiers(register):
    register("test-check-raises", CheckRaises)
    register("test-verify-raises", VerifyRaises)


@hookimpl
def register_opponent_samplers(register):
    register("test-raise", RaisingSampler)


@hookimpl
def register_games(register):
    register(FlakyTicTacToe)


@hookimpl
def register_objectives(register):
    register("test-nan-loss", NanLoss)


@hookimpl
def register_callbacks(register):
    register("test-disk-full", DiskFull)
    register("test-kill-point", KillPoint)
