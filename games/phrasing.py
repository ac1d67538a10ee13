"""Prompt phrasings: the same game asked in other words, under other names, or without a menu.

A score can owe much to one wording of a prompt, or to a model having seen the game before.
So a game may ship other phrasings of its prompts (`Game.phrasings`), chosen by
``game_options.phrasing``; a run trains under any of them and `selfplay eval --suite`
measures under several. The four the evaluation suites use:

- ``default``: the prompt the game always writes;
- ``reworded``: the same information and answer format in other words, in every message a
  model reads (a model that drops the system message, as the tiny one does, sees a different
  prompt too);
- ``obfuscated``: the same game tree under other names: cells, pieces, cards and actions
  renamed, the rules rewritten without naming the game (after plybench's obfuscations, which
  separate reasoning from recall). Answers are written in the new names and the game reads
  them back (`Game.spelled`), so moves score as usual;
- ``no-menu``: no list of the legal moves and no example move anywhere in the prompt (the
  rules still say how a move is written), as Kaggle's game arena asks: a listed menu turns
  play into recognition. A board shows its free cells as free, not by their move names.

A phrasing that only rewords fixed text is a table ``{text of the default prompt: the same
text reworded}`` that `Game.phrased` applies to every message; one that renames or removes
things is written by the game itself (its table may then be empty).
"""

from __future__ import annotations

from collections.abc import Mapping

from selfplay.games.move_names import read_name


class Renaming:
    """A one-to-one renaming of a game's own names (cells, cards, actions) and its reverse.

    ``read`` reads a name as every game does (games/move_names.py: ASCII case and surrounding
    space forgiven, a character outside ASCII refused) and returns None for a name the
    renaming does not have, so that a game's own name (``4`` where the cells are ``j``-``s``)
    is never read as a move.
    """

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = dict(names)
        back = {new.strip().lower(): own for own, new in self.names.items()}
        if len(back) != len(self.names):
            raise ValueError(f"a renaming must be one to one: {self.names}")
        self.back = back

    def spell(self, own: str) -> str:
        return self.names.get(own, own)

    def read(self, written: str) -> str | None:
        return self.back.get(read_name(written))
