"""The ``trajectory-filter`` callback: a safety screen between the rollout and the update.

Seed 000 asks that new trajectories be checked independently before they enter training.
This screen drops every match in which a learner's text matches one of the ``patterns``
(regular expressions, case-insensitive) or contains one of the ``blocklist`` words, before
rewards and samples are computed, so nothing it drops is trained on. The matches are still
written to episodes.jsonl (so a person can read what was screened out); metrics.csv gets
``filter/dropped`` (matches dropped this iteration, over every process's share) and
``filter/dropped_total``.

    selfplay run --set callbacks=[trajectory-filter] \\
        --set "callback_options.trajectory-filter.blocklist=[password, rm -rf]"
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from selfplay.api.callback import Callback
from selfplay.api.options import Options
from selfplay.api.sampler import is_learner
from selfplay.api.types import Episode


class FilterOptions(Options):
    patterns: list[str] = Field(
        default_factory=list,
        description="Regular expressions; a learner text matching one drops its match.",
    )
    blocklist: list[str] = Field(
        default_factory=list,
        description="Words or phrases; a learner text containing one drops"
        " its match (case-insensitive).",
    )
    roles: list[str] | None = Field(
        default=None, description="Roles whose texts are screened (default: every role)."
    )

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as err:
                raise ValueError(f"{pattern!r} is not a regular expression: {err}") from None
        return patterns


class TrajectoryFilter(Callback):
    """Drops matches whose learner texts match a pattern or a blocklisted phrase."""

    name = "trajectory-filter"
    Options = FilterOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        opts = self.options
        parts = [*opts.patterns, *(re.escape(word) for word in opts.blocklist)]
        self.screen = re.compile("|".join(f"(?:{p})" for p in parts), re.I) if parts else None
        self.total = 0

    def flagged(self, episode: Episode) -> bool:
        if self.screen is None:
            return False
        roles = self.options.roles
        return any(
            self.screen.search(turn.text)
            for turn in episode.turns
            if is_learner(turn.seat) and (roles is None or turn.role in roles)
        )

    def on_episodes(self, view: Any, episodes: Sequence[Episode]) -> Sequence[Episode]:
        kept = [episode for episode in episodes if not self.flagged(episode)]
        if episodes and not kept:  # nothing left to train on: say it, never silently
            view.say(
                f"[yellow]trajectory-filter dropped every one of the {len(episodes)} matches of "
                f"iteration {view.iteration}: nothing trains on them. Check its patterns and "
                "blocklist (callback_options.trajectory-filter) against `selfplay show`."
                "[/yellow]"
            )
        return kept

    def on_iteration_metrics(self, view: Any, episodes: Sequence[Episode], row: dict) -> None:
        # every process sees every process's episodes here: count them all, once
        dropped = sum(self.flagged(episode) for episode in episodes)
        self.total += dropped
        row["filter/dropped"] = float(dropped)
        row["filter/dropped_total"] = float(self.total)

    def state_dict(self) -> dict[str, Any]:
        return {"total": self.total}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.total = int(state.get("total", 0))
