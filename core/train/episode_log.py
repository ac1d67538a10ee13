"""The episode log: finished matches as JSON lines, one episode per line.

Why JSON lines: a run appends episodes as it plays, a person reads them with ``head`` or
``jq``, and a crash loses at most the line being written. Each line round-trips through
`Episode.to_json` / `Episode.from_json`, so any match can be re-read and replayed. A match
voided because the game's rules raised is a line ``{"void": true, "game", "seed", "turn",
"role", "call", "error"}`` (`selfplay.core.rollout.VoidMatch`); readers of episodes skip it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

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
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip() or line.startswith('{"void": true'):
                continue
            try:
                yield Episode.from_json(line)
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{path}, line {number}: not an episode ({err}).") from err


def read_episodes(path: str | Path) -> list[Episode]:
    """All episodes of ``path``, in the order they were written."""
    return list(iter_episodes(path))
