"""Runs `selfplay` with the test callbacks and rewards below registered as a built-in plugin,
and the faulty plug-ins of fault_plugins.py as another.

Used as a script (not `python -c`) so that Lightning's DDP launcher can start it again for
the second process. Usage: python tests/helpers/run_selfplay.py run --game ... --set ...
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
from pathlib import Path

import torch

from selfplay import Reward, hookimpl
from selfplay.api.callback import Callback
from selfplay.plugins import manager


class StallAfter(Callback):
    """Once iteration SELFPLAY_TEST_STALL_AT is checkpointed (checkpoints come after the
    callbacks' on_iteration_end), write a marker file and sleep (to be SIGKILLed): during
    the next iteration, once its matches are logged, so that a resume also drops them."""

    def on_iteration_metrics(self, view, episodes, row):
        if view.iteration == int(os.environ.get("SELFPLAY_TEST_STALL_AT", -1)) + 1:
            Path(os.environ["SELFPLAY_TEST_MARKER"]).write_text(str(view.iteration))
            time.sleep(600)


class WeightDigest(Callback):
    """Writes a digest of this process's weights to SELFPLAY_TEST_DIGESTS/rank-N."""

    def on_train_end(self, view, result):
        digest = hashlib.sha256()
        for policy in [view.learner, *view.learners.values()]:  # every learner of the run
            for name, tensor in sorted(policy.model.state_dict().items()):
                digest.update(name.encode())
                digest.update(tensor.detach().contiguous().numpy().tobytes())
        folder = Path(os.environ["SELFPLAY_TEST_DIGESTS"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"rank-{view.rank}").write_text(digest.hexdigest())


class RunningSum(Callback):
    """A callback with state: the running sum of every iteration's mean reward, logged.

    Resumed without its state, the column would restart from the resumed iteration's value.
    """

    def __init__(self, **options):
        super().__init__(**options)
        self.total = 0.0
        self.ended = 0  # iterations ended: a checkpoint must hold its own iteration's end

    def on_iteration_metrics(self, view, episodes, row):
        self.total += row["mean_reward"] + view.iteration
        row["test/running_sum"] = self.total

    def on_iteration_end(self, view, row):
        self.ended = view.iteration

    def state_dict(self):
        return {"total": self.total, "ended": self.ended}

    def load_state_dict(self, state):
        self.total, self.ended = state["total"], state["ended"]


class Scramble(Callback):
    """After iteration SELFPLAY_TEST_SCRAMBLE_AT, replace the learner's weights with noise (a
    collapse no game would miss: it writes nothing legal)."""

    def on_iteration_end(self, view, row):
        if view.iteration == int(os.environ.get("SELFPLAY_TEST_SCRAMBLE_AT", -1)):
            generator = torch.Generator().manual_seed(0)
            with torch.no_grad():
                for parameter in view.learner.model.parameters():
                    parameter.copy_(torch.randn(parameter.shape, generator=generator) * 3)


class NotANumber(Reward):
    name = "nan"

    def __call__(self, episodes):
        return [dict.fromkeys(ep.outcome, math.nan) for ep in episodes]


@hookimpl
def register_callbacks(register):
    register("test-stall", StallAfter)
    register("test-digest", WeightDigest)
    register("test-running-sum", RunningSum)
    register("test-scramble", Scramble)


@hookimpl
def register_rewards(register):
    register("test-nan", NotANumber)


if __name__ == "__main__":
    torch.set_num_threads(1)
    sys.modules["selfplay_test_plugin"] = sys.modules[__name__]
    import fault_plugins  # beside this script: the fault suite's faulty plug-ins

    sys.modules["selfplay_fault_plugin"] = fault_plugins
    manager.DEFAULT_PLUGINS = (
        *manager.DEFAULT_PLUGINS,
        "selfplay_test_plugin",
        "selfplay_fault_plugin",
    )
    from selfplay.core.commands.cli import main

    sys.exit(main(sys.argv[1:]))
