"""A penalty for a generated text too similar to earlier ones, by word n-gram overlap.

The anti-shortcut guard of proposer games: a proposer that keeps posing the same task gets
an easy solver win every time. Each text is compared with a bounded history of earlier texts
(older batches, then earlier matches of this batch); its similarity is the largest Jaccard
overlap of n-gram sets. At or above ``threshold`` the penalty grows linearly to ``-1`` at
identical text: ``-(similarity - threshold) / (1 - threshold)``; below it the score is 0.
Use a role suffix (``novelty@proposer``) to judge only the texts that pose tasks.

The history is part of the reward's state (`state_dict`), so a resumed run remembers it.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from selfplay.api.reward import Reward, RewardOptions, TurnScores
from selfplay.api.types import Episode
from selfplay.plugins.hookspecs import hookimpl

WORD = re.compile(r"\w+")


class NoveltyOptions(RewardOptions):
    n: int = Field(default=3, ge=1, description="Words per n-gram.")
    threshold: float = Field(
        default=0.6, ge=0, lt=1, description="Similarity from which the penalty starts."
    )
    history: int = Field(default=512, ge=1, description="Earlier texts remembered.")


def ngrams(text: str, n: int) -> frozenset[str]:
    """Lower-cased word n-grams; a text shorter than n words is one gram."""
    words = WORD.findall(text.lower())
    if len(words) < n:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


class Novelty(Reward):
    """Penalises texts whose n-grams overlap an earlier text's by more than `threshold`."""

    name = "novelty"
    Options = NoveltyOptions
    per_turn = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.history: deque[frozenset[str]] = deque(maxlen=self.options.history)

    def __call__(self, episodes: Sequence[Episode]) -> list[TurnScores]:
        return [
            [self._score(t.text) if self.applies_to(t.role) else None for t in ep.turns]
            for ep in episodes
        ]

    def _score(self, text: str) -> float | None:
        grams = ngrams(text, self.options.n)
        if not grams:
            return None
        similarity = max((jaccard(grams, old) for old in self.history), default=0.0)
        self.history.append(grams)
        threshold = self.options.threshold
        if similarity < threshold:
            return 0.0
        return -(similarity - threshold) / (1 - threshold)

    def state_dict(self) -> dict[str, Any]:
        return {"history": [sorted(grams) for grams in self.history]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.history.clear()
        self.history.extend(frozenset(grams) for grams in state["history"])


@hookimpl
def register_rewards(register):
    register("novelty", Novelty)
