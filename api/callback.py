"""Callbacks: per-iteration work that plugins add to the loop (monitors, schedules, filters).

Pluggy finds callbacks at start-up (``register_callbacks``); the loop then calls them
directly, so nothing plugin-related runs per iteration. A run names the callbacks it wants in
its config (``callbacks: [name, ...]``) and may pass each one options
(``callback_options: {name: {option: value}}``), given to its factory as keyword arguments
and validated by the callback's ``Options`` class.

What a callback receives from the run is a `RunView` (config, game, learner, run folder,
iteration, ...), never the trainer itself. A callback with state returns it from
``state_dict`` (plain Python values and tensors); the loop saves it in every checkpoint and
hands it back through ``load_state_dict`` on resume, before ``on_train_start``.

Every method is called on every process, with every process's episodes, so callbacks that
update state from episodes stay identical across processes.

A `Tracker` is where a run's metrics go (metrics.csv, TensorBoard, W&B, MLflow): it gets
every iteration's row on the main process only. Trackers register through
``register_trackers`` and a run names them in ``loggers`` (``--logger csv,wandb``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from selfplay.api.options import Options, parse_options

if TYPE_CHECKING:
    from selfplay.api.run_view import RunView
    from selfplay.api.types import Episode


class Callback:
    """Override what you need. ``view.iteration`` is the iteration being run (0 before any)."""

    name: ClassVar[str] = "callback"
    Options: ClassVar[type[Options]] = Options

    def __init__(self, **options: Any) -> None:
        self.options = parse_options(
            type(self).Options, self.name, f"callback_options.{self.name}", options
        )

    def on_train_start(self, view: RunView) -> None:
        """After set-up (and a resume's ``load_state_dict``), before the first iteration."""

    def on_episodes(self, view: RunView, episodes: Sequence[Episode]) -> Sequence[Episode]:
        """This process's matches of the iteration, before rewards and samples are made.

        Return the episodes to train on: drop some (a safety screen) or redact them. They are
        this process's share only; what is dropped here is still written to episodes.jsonl.
        """
        return episodes

    def on_iteration_metrics(
        self, view: RunView, episodes: Sequence[Episode], row: dict[str, Any]
    ) -> None:
        """Before the iteration's row is logged (evaluation metrics included): a monitor adds
        its columns to ``row`` here. ``episodes`` are every process's matches of the iteration.
        """

    def on_iteration_end(self, view: RunView, row: dict[str, Any]) -> None:
        """After the iteration's update, logging and checkpoint; ``row`` holds its metrics."""

    def on_train_end(self, view: RunView, result: Any) -> None:
        """After the final evaluation."""

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint must hold to resume this callback exactly (empty: stateless)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned; called before ``on_train_start``."""
        del state


class Tracker:
    """Where a run's metrics go: ``log`` gets every iteration's row, ``finalize`` the end.

    Made on the main process once the run folder exists, as ``factory(folder, config,
    run_id=..., **options)`` with the options of ``logger_options.NAME`` (validated by the
    tracker's ``Options``). A tracker that keeps a run of its own on a service (a W&B run)
    sets ``run_id``; the run keeps it in ``trackers.json`` and hands it back on resume, so a
    resumed run goes on in the same one. ``package`` names the Python package it needs: a run
    checks it is installed before any work and names the extra that installs it.
    """

    name: ClassVar[str] = "tracker"
    Options: ClassVar[type[Options]] = Options
    package: ClassVar[str | None] = None

    def __init__(
        self, folder: Path, config: Any, run_id: str | None = None, **options: Any
    ) -> None:
        self.folder, self.config, self.run_id = Path(folder), config, run_id
        self.options = parse_options(
            type(self).Options, self.name, f"logger_options.{self.name}", options
        )

    def log(self, row: Mapping[str, Any], step: int) -> None:
        """One iteration's metrics (numbers, and a few texts) at iteration ``step``."""
        raise NotImplementedError

    def finalize(self, status: str) -> None:
        """The run ended: ``success`` or ``failed``."""
