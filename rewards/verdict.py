"""Per-turn scores from the verdicts a game keeps: ``pass`` pays ``passed``, the rest ``failed``.

A game whose rules verify every answer (``math-solver``) records one verdict per turn in its
state (``verdicts``: pass, fail, timeout, error, or invalid for an attempt the rules
rejected). This reward reads them back, so nothing is verified twice. An ``error`` verdict is
the checker's fault, not the answer's: it scores None (masked) and is counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from selfplay.api.reward import Reward, RewardError, RewardOptions, TurnScores
from selfplay.api.types import Episode
from selfplay.plugins.hookspecs import hookimpl


class VerdictOptions(RewardOptions):
    key: str = Field(default="verdicts", description="The state field holding the verdicts.")
    passed: float = Field(default=1.0, description="Score of a turn that passed.")
    failed: float = Field(default=0.0, description="Score of a turn that failed or timed out.")


class Verdict(Reward):
    """Scores each turn by the verdict the game recorded for it (pass, fail, ...)."""

    name = "verdict"
    Options = VerdictOptions
    per_turn = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._counts = {"passed": 0, "error": 0}

    def __call__(self, episodes: Sequence[Episode]) -> list[TurnScores]:
        self._counts = dict.fromkeys(self._counts, 0)
        return [self._episode(episode) for episode in episodes]

    def _episode(self, episode: Episode) -> TurnScores:
        verdicts = episode.state.get(self.options.key)
        if verdicts is None or len(verdicts) != len(episode.turns):
            raise RewardError(
                f"The verdict reward needs one verdict per turn in the state's "
                f"{self.options.key!r}; {episode.game} keeps none there (a game that records "
                "verdicts, e.g. math-solver, or another reward such as process)."
            )
        return [
            self._score(verdict) if self.applies_to(turn.role) else None
            for turn, verdict in zip(episode.turns, verdicts, strict=True)
        ]

    def _score(self, verdict: str) -> float | None:
        if verdict == "pass":
            self._counts["passed"] += 1
            return self.options.passed
        if verdict == "error":
            self._counts["error"] += 1
            return None
        return self.options.failed

    def counters(self) -> dict[str, float]:
        return {key: float(value) for key, value in self._counts.items()}


@hookimpl
def register_rewards(register):
    register("verdict", Verdict)
