"""Callbacks: per-iteration work that plugins add to the loop (snapshots, ratings, reports).

Pluggy finds callbacks at start-up (``register_callbacks``); the loop then calls them
directly, so nothing plugin-related runs per iteration. A run names the callbacks it wants in
its config (``callbacks: [name, ...]``) and may pass each one options
(``callback_options: {name: {option: value}}``), given to its factory as keyword arguments.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError


class Callback:
    """Override what you need; every method is called on every process."""

    def on_train_start(self, trainer: Any) -> None:
        """After set-up and the first evaluation, before the first iteration."""

    def on_iteration_metrics(
        self, trainer: Any, iteration: int, episodes: list[Any], row: dict[str, Any]
    ) -> None:
        """Before the iteration's row is logged (evaluation metrics included): a monitor adds
        its columns to ``row`` here. ``episodes`` are every process's matches of the iteration.
        """

    def on_iteration_end(self, trainer: Any, iteration: int, row: dict[str, Any]) -> None:
        """After the iteration's update, logging and checkpoint; ``row`` holds its metrics."""

    def on_train_end(self, trainer: Any, result: Any) -> None:
        """After the final evaluation."""


def parse_options(options_cls: type[BaseModel], callback: str, options: dict[str, Any]) -> Any:
    """A callback's options validated by its pydantic class; a bad key reads as one sentence."""
    try:
        return options_cls(**options)
    except ValidationError as err:
        problems = []
        for problem in err.errors():
            key = ".".join(str(p) for p in problem["loc"])
            if problem["type"] == "extra_forbidden":
                valid = ", ".join(sorted(options_cls.model_fields))
                problems.append(f"{callback} has no option {key!r}; its options are: {valid}.")
            else:
                problems.append(f"callback_options.{callback}.{key}: {problem['msg']}.")
        raise ValueError(" ".join(problems)) from None
