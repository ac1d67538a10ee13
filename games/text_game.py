"""What language games share: free-text moves, role prompt templates and shipped text banks.

A move in a language game is the text itself, not a bracketed answer: an argument, a question,
an answer. It is valid when, after dropping ``<think>...</think>`` blocks, it is non-empty and
at most ``max_chars`` characters long; nothing else about it is checked (its worth is the
judge's business, not the rules'). An empty or overlong text is an invalid move like any
other, handled by the shared invalid-move rules.

Prompt templates are ``games/prompts/<game>/<name>.txt`` with ``$name`` placeholders
(`string.Template`; substitution never re-reads what it inserted, so model text cannot inject
placeholders). Banks are ``games/data/<name>.jsonl``: one JSON record per line, each with a
``split`` of ``train`` or ``heldout``; the held-out records are never drawn in training.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from string import Template
from typing import Any, Literal

from pydantic import Field

from selfplay.api.game import Game, GameOptions, GameState, InvalidAction
from selfplay.api.types import Role

SPLITS = ("train", "heldout")
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class TextGameOptions(GameOptions):
    max_chars: int = Field(
        default=2000, ge=1, description="Longest valid move, in characters (longer is invalid)."
    )
    split: Literal["train", "heldout", "all"] = Field(
        default="train", description="Which part of the shipped bank matches draw from."
    )


@cache
def load_prompt(game: str, name: str) -> Template:
    """The shipped template ``games/prompts/<game>/<name>.txt``."""
    path = resources.files("selfplay.games").joinpath("prompts", game, f"{name}.txt")
    return Template(path.read_text(encoding="utf-8").strip())


@cache
def load_bank(name: str, split: str) -> tuple[dict[str, Any], ...]:
    """The records of ``games/data/<name>.jsonl`` in ``split`` (``all`` for every record)."""
    path = resources.files("selfplay.games").joinpath("data", f"{name}.jsonl")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    bad = [r for r in records if r.get("split") not in SPLITS]
    if bad:
        raise ValueError(f"{name}.jsonl: record {bad[0]} has no split in {SPLITS}.")
    chosen = tuple(r for r in records if split in ("all", r["split"]))
    if not chosen:
        raise ValueError(f"{name}.jsonl has no records in split {split!r}.")
    return chosen


def without_thinking(text: str) -> str:
    """``text`` minus ``<think>...</think>`` blocks; an unclosed block runs to the end."""
    kept, position = [], 0
    while (start := text.find(THINK_OPEN, position)) != -1:
        kept.append(text[position:start])
        end = text.find(THINK_CLOSE, start)
        if end == -1:
            return "".join(kept)
        position = end + len(THINK_CLOSE)
    kept.append(text[position:])
    return "".join(kept)


class TextGame(Game):
    """A game whose moves are free text; subclasses name what a move is (``move_noun``)."""

    Options = TextGameOptions
    answer_hint = "plain text"
    move_noun = "answer"

    def parse(self, text: str) -> str:
        move = without_thinking(text).strip()
        if not move:
            raise InvalidAction(f"the {self.move_noun} is empty; write it as plain text.")
        return move

    def legal(self, state: GameState, role: Role, action: str) -> str:
        limit = self.options.max_chars
        if len(action) > limit:
            raise InvalidAction(
                f"the {self.move_noun} has {len(action)} characters; keep it to {limit}."
            )
        return action
