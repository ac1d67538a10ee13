"""The episode log: finished matches as JSON lines, one episode per line.

Why JSON lines: a run appends episodes as it plays, a person reads them with ``head`` or
``jq``, and a crash loses at most the line being written. Each line round-trips through
`Episode.to_json` / `Episode.from_json`, so any match can be re-read and replayed. A match
voided because the game's rules raised is a line ``{"void": true, "game", "seed", "turn",
"role", "call", "error"}`` (`selfplay.core.rollout.VoidMatch`); readers of episodes skip it.

Once scored, a match is written with its ``record`` (`with_record`): the iteration, each
turn's share of every weighted reward term and what the rewards read (a judge's raw
answers), so `selfplay show` and `selfplay export --format prm` need nothing but this file.
Lines written before records existed have none; readers then count iterations by line.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.reward import EpisodeScores
from selfplay.api.types import Episode
from selfplay.core.rollout import VoidMatch


def write_episodes(path: str | Path, episodes: Iterable[Episode | VoidMatch]) -> int:
    """Append ``episodes`` to ``path`` (created with its folder if missing); returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [episode.to_json() + "\n" for episode in episodes]
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(lines)
    return len(lines)


def iter_episodes(path: str | Path) -> Iterator[Episode]:
    """Episodes of ``path`` one at a time, so large logs need not fit in memory."""
    for _, episode in iter_numbered(path):
        yield episode


def iter_numbered(path: str | Path) -> Iterator[tuple[int, Episode]]:
    """(line index from 0, episode) for the episodes of ``path``; void lines count as lines."""
    with Path(path).open(encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if not line.strip():
                continue
            if line.startswith('{"void": true'):
                continue
            try:
                yield index, Episode.from_json(line)
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{path}, line {index + 1}: not an episode ({err}).") from err


def episodes_file(source: str | Path) -> Path:
    """The ``episodes.jsonl`` of run folder ``source`` (or of the run a checkpoint folder is in).

    Raises ConfigError naming the folder when it is not a run folder or holds no episodes yet.
    """
    source = Path(source)
    folder = source if (source / "config.yaml").is_file() else source.parent.parent
    if not (folder / "config.yaml").is_file():
        raise ConfigError(
            f"{source} is not a run folder (no config.yaml); pass one such as runs/NAME."
        )
    log = folder / "episodes.jsonl"
    if not log.is_file():
        raise ConfigError(f"{folder} has no episodes.jsonl yet: the run never finished a match.")
    return log


def read_episodes(path: str | Path) -> list[Episode]:
    """All episodes of ``path``, in the order they were written."""
    return list(iter_episodes(path))


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


def episode_iteration(episode: Episode, line: int, matches: int) -> int:
    """The iteration that played ``episode``, the ``line``-th (from 0) of the log."""
    recorded = episode.record.get("iteration")
    return int(recorded) if recorded is not None else line // max(matches, 1) + 1


def _plus(a: float | None, b: float | None) -> float | None:
    if a is None and b is None:
        return None
    return _json_number((a or 0.0) + (b or 0.0))


def _json_number(value: float | None) -> float | str | None:
    """JSON has no NaN or infinity: those are written as text ("nan", "inf")."""
    if value is None or math.isfinite(value):
        return value
    return str(value)
