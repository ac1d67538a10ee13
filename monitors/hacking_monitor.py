"""The ``hacking-monitor``: training reward rising while held-out accuracy falls.

Why: a self-play reward is a proxy. When the policy learns to please the proxy (a lenient
judge, a proposer posing trivial tasks) the training reward keeps rising while what we care
about, accuracy on problems it never trains on, goes down. The SPIRAL write-up advises
watching exactly this and going back to the best checkpoint when it happens.

How it decides, at each evaluation (a row that has ``metric``, by default
``eval/held_out/accuracy``):

- the training reward of an evaluation is the mean of ``reward`` (``mean_reward``) over the
  iterations since the previous evaluation, so a noisy single iteration matters less;
- over the last ``window`` evaluations it fits a least-squares line to each series; the
  fitted change across the window is ``slope * (window - 1)``;
- it fires when the reward's change is above ``min_rise`` and the metric's change is below
  ``-min_drop``. The row then gets ``monitor/hacking = 1`` (0 at other evaluations) and a
  warning is printed.

Rollback (``rollback: true``) keeps, in memory, a copy of the learner's trainable parameters
from the evaluation with the best metric so far: the adapters under LoRA, all the weights
otherwise (for a 135M-parameter float32 model about 540 MB). When the monitor fires it copies
them back into the learner, clears the optimiser's moments (they point the way the run was
drifting), writes ``monitor/rolled_back_to`` (the iteration of those weights) and starts a
fresh window. The run's checkpoints are not read or changed; the next checkpoint holds the
restored weights. Every process decides the same way, as every process sees the same row.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from pydantic import Field

from selfplay.api.callback import Callback
from selfplay.api.errors import ConfigError
from selfplay.api.options import Options

log = logging.getLogger(__name__)


class HackingOptions(Options):
    metric: str = Field(
        default="eval/held_out/accuracy", description="Held-out metric that should not fall."
    )
    reward: str = Field(default="mean_reward", description="Training reward column.")
    window: int = Field(default=5, ge=2, description="Evaluations the trends are fitted over.")
    min_rise: float = Field(default=0.0, ge=0, description="Reward change that counts as rising.")
    min_drop: float = Field(default=0.0, ge=0, description="Metric change that counts as falling.")
    rollback: bool = Field(default=False, description="Restore the best weights when it fires.")


def fitted_change(values: list[float]) -> float:
    """Change across ``values`` along their least-squares line: slope × (len − 1)."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values))
    variance = sum((x - mean_x) ** 2 for x in range(n))
    return covariance / variance * (n - 1)


@dataclass
class BestWeights:
    iteration: int
    value: float
    parameters: dict[str, torch.Tensor] | None


class HackingMonitor(Callback):
    """Warns (and optionally rolls back) when reward rises while the held-out metric falls."""

    name = "hacking-monitor"
    Options = HackingOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.rewards_since: list[float] = []
        self.points: list[tuple[float, float]] = []  # (training reward, metric) per evaluation
        self.best: BestWeights | None = None
        self.fired: list[int] = []

    def on_iteration_metrics(self, view: Any, episodes: Sequence[Any], row: dict) -> None:
        opts, iteration = self.options, view.iteration
        if opts.reward not in row:
            raise ConfigError(
                f"hacking-monitor: the row has no reward column {opts.reward!r}; set "
                f"callback_options.hacking-monitor.reward to one of: {', '.join(sorted(row))}."
            )
        self.rewards_since.append(float(row[opts.reward]))
        if opts.metric not in row:
            return
        value = float(row[opts.metric])
        reward = sum(self.rewards_since) / len(self.rewards_since)
        self.rewards_since = []
        self.points = [*self.points, (reward, value)][-opts.window :]
        if self.best is None or value > self.best.value:
            self.best = BestWeights(iteration, value, self._copy(view) if opts.rollback else None)
        hacking = self.is_hacking()
        row["monitor/hacking"] = float(hacking)
        if hacking:
            self.fired.append(iteration)
            self._warn(view, iteration)
            if opts.rollback:
                row["monitor/rolled_back_to"] = self._roll_back(view)

    def is_hacking(self) -> bool:
        if len(self.points) < self.options.window:
            return False
        rise = fitted_change([reward for reward, _ in self.points])
        change = fitted_change([value for _, value in self.points])
        return rise > self.options.min_rise and change < -self.options.min_drop

    def on_train_end(self, view: Any, result: Any) -> None:
        if self.best is None:
            view.say(self.unseen_note(view))

    def unseen_note(self, view: Any) -> str:
        """Why the metric never showed: no evaluation during training, or no such metric."""
        metric, every = self.options.metric, view.config.eval.every
        if not every:
            return (
                f"hacking-monitor never saw the metric {metric!r}: evaluate during training "
                "(eval.every) or name a logged metric in callback_options.hacking-monitor.metric."
            )
        if every > view.iteration:
            return (
                f"hacking-monitor never saw the metric {metric!r}: eval.every={every} evaluates "
                f"after more iterations than this run trained ({view.iteration}); lower it."
            )
        return (
            f"hacking-monitor never saw the metric {metric!r}, though eval.every={every}: "
            f"{view.game.name} logs no such metric at its evaluations (only games with held-out "
            "tasks log eval/held_out/accuracy); name one it logs in "
            "callback_options.hacking-monitor.metric, e.g. eval/<opponent>/win_rate."
        )

    # ---- pieces ----------------------------------------------------------------------------

    def _warn(self, view: Any, iteration: int) -> None:
        opts = self.options
        log.warning(
            f"iteration {iteration}: {opts.reward} rose while "
            f"{opts.metric} fell over the last {opts.window} evaluations: possible reward "
            "hacking.",
        )

    def _roll_back(self, view: Any) -> int:
        assert self.best is not None and self.best.parameters is not None
        saved = self.best.parameters
        with torch.no_grad():
            for name, parameter in _trainable(view.learner.model):
                parameter.copy_(saved[name])
        view.reset_optimizer()
        self.points = []
        self.rewards_since = []
        view.say(f"hacking-monitor: rolled back to iteration {self.best.iteration}.")
        return self.best.iteration

    def _copy(self, view: Any) -> dict[str, torch.Tensor]:
        return {name: p.detach().clone() for name, p in _trainable(view.learner.model)}


def _trainable(model: Any) -> list[tuple[str, torch.nn.Parameter]]:
    return [(name, p) for name, p in model.named_parameters() if p.requires_grad]
