"""The episode log: finished matches as JSON lines, one episode per line.

Why JSON lines: a run appends episodes as it plays, a person reads them with ``head`` or
``jq``, and a crash loses at most the line being written. Each line round-trips through
`Episode.to_json` / `Episode.from_json`, so any match can be re-read and replayed. A match
voided because the game's rules raised is a line ``{"void": true, "game", "seed", "turn",
"role", "call", "error"}`` (`selfplay.core.rollout.VoidMatch`); readers of episodes skip it.

Once scored, a match is written with its ``record`` (core/train/samples.py): the iteration, each
turn's share of every weighted reward term and what the rewards read (a judge's raw
answers), so `selfplay show` and `selfplay export --format prm` need nothing but this file.
Lines written before records existed have none; readers then count iterations by line.

A last line cut short (a run killed while writing it; a resume cuts it off) is read past with a
warning; any other line that is not an episode stops the reader with a ConfigError (exit 2)
that names the file and the line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from selfplay.api.errors import ConfigError
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
    """(line index from 0, episode) for the episodes of ``path``; void lines count as lines.
    A last line cut short is left out, with a warning (`damaged`)."""
    with Path(path).open(encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if not line.strip() or line.startswith('{"void": true'):
                continue
            try:
                episode = Episode.from_json(line)
            except (ValueError, KeyError, TypeError, AttributeError) as err:
                damaged(path, index, line, "an episode", err)
                continue
            yield index, episode


def damaged(path: str | Path, index: int, line: str, what: str, err: Exception) -> None:
    """A line that does not read as ``what``. Lines are written whole, each with its newline,
    so a last line without one was cut short when its writer stopped (a crash, a kill): it is
    left out with a warning on stderr. Any other such line is damage: a
    ConfigError names the file and the line, and nothing is read past it."""
    where = f"{path}, line {index + 1}"
    if not line.endswith("\n"):
        warning = f"warning: {where} is cut short (its writer stopped mid-line); read without it."
        print(warning, file=sys.stderr, flush=True)
        return
    raise ConfigError(
        f"{where} is not {what} ({type(err).__name__}: {err}); the file is damaged there: "
        "keep a copy, remove that line and run this again."
    ) from None


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


def episode_iteration(episode: Episode, line: int, matches: int) -> int:
    """The iteration that played ``episode``, the ``line``-th (from 0) of the log."""
    recorded = episode.record.get("iteration")
    return int(recorded) if recorded is not None else line // max(matches, 1) + 1
