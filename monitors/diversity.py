"""The ``diversity`` monitor: how varied the learner's texts are, per role and iteration.

Why: a proposer trained by self-play can collapse onto a handful of tasks it knows how to
pose; its reward still looks healthy while it stops exploring. Distinct-n (Li et al. 2016,
"A Diversity-Promoting Objective Function for Neural Conversation Models") and the share of
exact duplicates make that collapse visible in metrics.csv:

- ``diversity/<role>/distinct_1`` and ``distinct_2``: distinct word n-grams divided by all
  word n-grams over the iteration's texts of that role (1.0 = no n-gram repeats). Words are
  whitespace-separated and lower-cased; a text shorter than n words counts as one n-gram of
  itself, so one-word moves still get a distinct-2.
- ``diversity/<role>/duplicate_rate``: the share of texts that repeat an earlier text of the
  same iteration exactly (after stripping surrounding whitespace).

Only turns the learner played are counted (opponents' and scripted players' texts are not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from selfplay.api.callback import Callback
from selfplay.api.errors import ConfigError
from selfplay.api.options import Options
from selfplay.api.sampler import is_learner
from selfplay.api.types import Episode

ALL_ROLES = "all"


def ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    """Word n-grams of ``text``; a non-empty text shorter than n words is one n-gram."""
    words = tuple(text.lower().split())
    if not words:
        return []
    if len(words) < n:
        return [words]
    return [words[i : i + n] for i in range(len(words) - n + 1)]


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Distinct n-grams over all n-grams of ``texts`` (0.0 when there are none)."""
    grams = [gram for text in texts for gram in ngrams(text, n)]
    return len(set(grams)) / len(grams) if grams else 0.0


def duplicate_rate(texts: Sequence[str]) -> float:
    """Share of texts equal to an earlier one (0.0 for no texts)."""
    stripped = [text.strip() for text in texts]
    return 1 - len(set(stripped)) / len(stripped) if stripped else 0.0


def diversity_metrics(texts: Sequence[str], prefix: str) -> dict[str, float]:
    return {
        f"{prefix}/distinct_1": distinct_n(texts, 1),
        f"{prefix}/distinct_2": distinct_n(texts, 2),
        f"{prefix}/duplicate_rate": duplicate_rate(texts),
    }


def learner_texts(episodes: Sequence[Episode], role: str) -> list[str]:
    return [t.text for ep in episodes for t in ep.turns if t.role == role and is_learner(t.seat)]


class DiversityOptions(Options):
    role: str | None = Field(
        default=None,
        description="Role whose texts are measured; default the game's first role "
        "(the proposer in proposer games); 'all' measures every role.",
    )


class DiversityMonitor(Callback):
    """Adds distinct-1, distinct-2 and the duplicate rate of the learner's texts to each row."""

    name = "diversity"
    Options = DiversityOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.roles: tuple[str, ...] = ()

    def on_train_start(self, view: Any) -> None:
        self.roles = self.resolve_roles(tuple(view.game.roles))

    def resolve_roles(self, roles: tuple[str, ...]) -> tuple[str, ...]:
        chosen = self.options.role
        if chosen is None:
            return roles[:1]
        if chosen == ALL_ROLES:
            return roles
        if chosen not in roles:
            raise ConfigError(
                f"callback_options.diversity.role is {chosen!r}, but the game's roles are "
                f"{', '.join(roles)}; pick one of them or {ALL_ROLES!r}."
            )
        return (chosen,)

    def on_iteration_metrics(self, view: Any, episodes: Sequence[Any], row: dict) -> None:
        for role in self.roles:
            row.update(diversity_metrics(learner_texts(episodes, role), f"diversity/{role}"))
