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
    """A non-finite score in some matches (seed % every == 0), 0 in the others."""

    name = "test-spike"
    Options = SpikeOptions

    def __call__(self, episodes):
        spike = float(self.options.value)
        return [
            dict.fromkeys(ep.outcome, spike if ep.seed % self.options.every == 0 else 0.0)
            for ep in episodes
        ]


class RaisingReward(Reward):
    """Raises on every batch."""

    name = "test-raise"

    def __call__(self, episodes):
        raise ValueError("the test reward broke")


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
