"""One iteration's metrics: the row metrics.csv, TensorBoard and every tracker get.

A column a metric, in the order they were added: the iteration adds its matches', rewards',
learners' and rollout's metrics, the league its own, the run's duties the evaluations and the
elapsed time (core/run/duties/), and callbacks their columns. The row is a `dict` (what a
callback's ``on_iteration_metrics`` has always been handed, and still may change), with the
run's own columns written through typed methods, so who adds what reads in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class MetricsRow(dict[str, Any]):
    """``{"iteration": n, column: value, ...}``; a learner's columns in a run of several are
    prefixed with its name (``player_1/loss``)."""

    def __init__(self, iteration: int) -> None:
        super().__init__(iteration=iteration)

    @property
    def iteration(self) -> int:
        return int(self["iteration"])

    def add(self, metrics: Mapping[str, Any], learner: str = "") -> None:
        """``metrics`` as columns, under ``learner``'s prefix (``NAME/``, or none)."""
        self.update({f"{learner}{key}": value for key, value in metrics.items()})

    def timed(self, rollout_seconds: float, update_seconds: float) -> None:
        """How long the iteration played and trained (the rest: evaluations, logging)."""
        self["rollout_seconds"] = rollout_seconds
        self["update_seconds"] = update_seconds

    def elapsed(self, seconds: float) -> None:
        """The run's training time to this iteration, a resumed run's earlier ones included."""
        self["elapsed_seconds"] = seconds
