"""Judge prompts: template files, transcripts of episodes, and reading the judge's answer.

Templates are plain text with ``$name`` placeholders (`string.Template`): the shipped ones live
in ``rewards/prompts/*.txt`` and are named without the suffix (``judge_turn``); any other
``.txt`` file may be given by path. Substitution never re-reads the substituted text, so an
episode's text cannot inject placeholders.

A judge answer is read from its last ``Score: N`` (or ``Winner: A|B|tie``) line; anything else
is unreadable and the caller masks it, never scoring it 0.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from string import Template

from selfplay.api.reward import RewardError
from selfplay.api.types import Episode, Turn

PLACEHOLDERS = ("game", "task", "transcript", "role", "response", "scale", "first", "second")
SCORE = re.compile(r"score\s*[:=]\s*\**\s*(\d{1,4})\b", re.IGNORECASE)
WINNER = re.compile(r"winner\s*[:=]\s*\**\s*(a|b|tie)\b", re.IGNORECASE)


def shipped() -> list[str]:
    folder = resources.files("selfplay.rewards").joinpath("prompts")
    return sorted(p.name[: -len(".txt")] for p in folder.iterdir() if p.name.endswith(".txt"))


def load_template(name: str) -> Template:
    """A shipped template by name, or a ``.txt`` file by path; checked for bad placeholders."""
    if name in shipped():
        path = resources.files("selfplay.rewards").joinpath("prompts", f"{name}.txt")
        text = path.read_text(encoding="utf-8")
    elif name.endswith(".txt") and Path(name).expanduser().is_file():
        text = Path(name).expanduser().read_text(encoding="utf-8")
    else:
        raise RewardError(
            f"Judge template {name!r} is neither a shipped template ({', '.join(shipped())}) "
            "nor an existing .txt file."
        )
    template = Template(text)
    try:
        template.substitute(dict.fromkeys(PLACEHOLDERS, ""))
    except KeyError as err:
        raise RewardError(
            f"Judge template {name!r} uses the unknown placeholder ${err.args[0]}; "
            f"known: {', '.join('$' + p for p in PLACEHOLDERS)}."
        ) from None
    except ValueError as err:
        raise RewardError(f"Judge template {name!r}: {err} (write $$ for a dollar sign).") from None
    return template


def clip(text: str, limit: int) -> str:
    """The last ``limit`` characters: answers sit at the end of what a model writes."""
    return text if len(text) <= limit else "..." + text[-limit:]


def task_of(turn: Turn, limit: int) -> str:
    """What a turn's player was asked: the last message of its prompt."""
    return clip(turn.prompt[-1].content, limit) if turn.prompt else ""


def transcript(episode: Episode, limit: int) -> str:
    return "\n".join(f"[{turn.role}] {clip(turn.text, limit)}" for turn in episode.turns)


def parse_score(text: str, scale: int) -> int | None:
    """The last ``Score: N`` with 0 <= N <= scale, else None."""
    found = SCORE.findall(text)
    if not found:
        return None
    score = int(found[-1])
    return score if score <= scale else None


def parse_winner(text: str) -> str | None:
    """``"A"``, ``"B"`` or ``"tie"`` from the last ``Winner:`` line, else None."""
    found = WINNER.findall(text)
    if not found:
        return None
    answer = found[-1].lower()
    return "tie" if answer == "tie" else answer.upper()
