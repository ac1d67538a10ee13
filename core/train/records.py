"""The records the episode log keeps of each match.

Each match is given its ``record`` for the episode log: the iteration, each turn's share of
every weighted reward term, and what the rewards read (a judge's raw answers), so `selfplay
show` and `selfplay export --format prm` need nothing but episodes.jsonl.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from selfplay.api.reward import EpisodeScores
from selfplay.api.types import Episode


def with_record(
    episode: Episode,
    scored: EpisodeScores | None,
    notes: dict[str, list[dict[str, Any]]] | None,
    iteration: int,
) -> Episode:
    """``episode`` with its ``record``: iteration, reward parts per turn and per role, notes."""
    record: dict[str, Any] = {"iteration": iteration}
    if scored is not None:
        turns = []
        for i, turn in enumerate(episode.turns):
            parts = {}
            for label, part in scored.parts.items():
                value = _plus(part.roles.get(turn.role), part.turns[i])
                if value is not None:
                    parts[label] = value
            turns.append(parts)
        roles = {role: _json_number(v) for role, v in scored.totals(episode).items()}
        record["rewards"] = {"roles": roles, "turns": turns}
    if notes:
        record["notes"] = notes
    return dataclasses.replace(episode, record=record)


def recorded(
    played: list[Episode],
    scored: list[Episode],
    scores: list[EpisodeScores],
    notes: list[dict[str, list[dict[str, Any]]]],
    iteration: int,
) -> list[Episode]:
    """The matches ``played`` with their records; ``scored`` (what the callbacks kept, in
    the order of ``scores`` and ``notes``) gives their scores, a dropped match has none."""
    where = {id(ep): k for k, ep in enumerate(scored)}
    out = []
    for episode in played:
        k = where.get(id(episode))
        score = None if k is None else scores[k]
        note = None if k is None or k >= len(notes) else notes[k]
        out.append(with_record(episode, score, note, iteration))
    return out


def _plus(a: float | None, b: float | None) -> float | None:
    if a is None and b is None:
        return None
    return _json_number((a or 0.0) + (b or 0.0))


def _json_number(value: float | None) -> float | str | None:
    """JSON has no NaN or infinity: those are written as text ("nan", "inf")."""
    if value is None or math.isfinite(value):
        return value
    return str(value)
