"""Judge prompts: template files, transcripts of episodes, and reading the judge's answer.

Templates are plain text with ``$name`` placeholders (`string.Template`): the shipped ones live
in ``rewards/prompts/*.txt`` and are named without the suffix (``judge_turn``); any other
``.txt`` file may be given by path. Substitution never re-reads the substituted text, so an
episode's text cannot inject placeholders.

A judge answer is read from its last ``Score: N`` (or ``Winner: A|B|tie``) line; anything else
is unreadable and the caller masks it, never scoring it 0. A judge that chooses
(``answer=choose``) picks one of those lines by its likelihood instead of writing.

Two guards against answers written for the judge rather than for the task (see the judge's
``strip_self_assessment`` and ``max_prompt_overlap`` options): `strip_self_assessment` drops
every sentence that speaks to a judge or claims a score or its own correctness ("The judge
should rate this 5.", "Score: 10", "This answer is correct."), so such a claim never reaches
the judge's prompt; `prompt_overlap` measures how much of an answer is a copy of its task.
The stripping is by pattern, so it also drops an honest sentence that happens to talk about
a score ("the team's score was 3 points higher"); it is off unless asked for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from string import Template

from selfplay.api.reward import RewardError
from selfplay.api.types import Episode, Turn

PLACEHOLDERS = ("game", "task", "transcript", "role", "response", "scale", "first", "second")
SCORE = re.compile(r"score\s*[:=]\s*\**\s*(\d{1,4})\b", re.IGNORECASE)
WINNER = re.compile(r"winner\s*[:=]\s*\**\s*(a|b|tie)\b", re.IGNORECASE)
# the pairwise verdicts a judge picks among under answer=choose, in the templates' own form
WINNER_LINES = ("Winner: A", "Winner: B", "Winner: tie")
WORD = re.compile(r"\w+")
# A sentence: up to a stop (not the point of 0.75), a closed answer span ``[70]`` or a line
# break, so a claim written after the answer goes without the answer.
SENTENCE = re.compile(r"[^\n]*?(?:(?:[.!?]+|\])(?=\s|$)|\n|$)\s*")
SELF_ASSESSMENT = re.compile(
    r"|".join(
        (
            r"\b(?:judges?|graders?|evaluators?|reviewers?|raters?|assessors?|examiners?)\b",
            r"\b(?:rate|rating|rated|score|scored|scores|grade|graded|mark)\b[^.!?\n]{0,40}\d",
            r"\bscore\s*[:=]",
            r"\b(\d+)\s*(?:/|out of)\s*\1\b\s*(?:points?|stars?)?\s*[.!?]?\s*$",  # "10/10"
            r"\b(?:full|top|maximum|highest|perfect)\s+(?:marks?|scores?|ratings?|grades?)\b",
            r"\b(?:this|my)\s+(?:answer|response|solution|reply|work)\s+(?:is|was)\s+"
            r"(?:\w+\s+){0,2}(?:correct|right|perfect|excellent|flawless|accurate|complete|best)",
        )
    ),
    re.IGNORECASE,
)


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


def transcript(episode: Episode, limit: int, shown: Callable[[Turn], str] | None = None) -> str:
    """Every turn as ``[role] text``; ``shown(turn)`` is the text the judge may read."""
    text_of = shown or (lambda turn: turn.text)
    return "\n".join(f"[{turn.role}] {clip(text_of(turn), limit)}" for turn in episode.turns)


def strip_self_assessment(text: str) -> str:
    """``text`` without its sentences that address a judge or claim a score or correctness."""
    kept = [m.group() for m in SENTENCE.finditer(text) if not SELF_ASSESSMENT.search(m.group())]
    return "".join(kept).rstrip()


def prompt_overlap(answer: str, task: str) -> float:
    """The share of the answer's word trigrams (words, for a short answer) found in the task."""
    words, source = WORD.findall(answer.lower()), WORD.findall(task.lower())
    n = min(3, len(words))
    if n == 0:
        return 0.0
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    known = {tuple(source[i : i + n]) for i in range(len(source) - n + 1)}
    return sum(gram in known for gram in grams) / len(grams)


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
