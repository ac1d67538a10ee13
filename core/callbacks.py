"""Callbacks: per-iteration work that plugins add to the loop (snapshots, ratings, reports).

Pluggy finds callbacks at start-up (``register_callbacks``); the loop then calls them
directly, so nothing plugin-related runs per iteration. A run names the callbacks it wants in
its config (``callbacks: [name, ...]``).
"""

from __future__ import annotations

from typing import Any


class Callback:
    """Override what you need; every method is called on every process."""

    def on_train_start(self, trainer: Any) -> None:
        """After set-up and the first evaluation, before the first iteration."""

    def on_iteration_end(self, trainer: Any, iteration: int, row: dict[str, Any]) -> None:
        """After the iteration's update, logging and checkpoint; ``row`` holds its metrics."""

    def on_train_end(self, trainer: Any, result: Any) -> None:
        """After the final evaluation."""
