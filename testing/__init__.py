"""One call that checks a new game against the contract: ``check_game(MyGame)``.

As PettingZoo's ``api_test``: a plugin's test needs one line, and every built-in game passes the
same check. It plays random matches (legal answers, some malformed text mixed in) and asserts,
naming the game, seed and turn, that:

- every match ends within ``max_turns * (allowance + 1)`` attempts, and ``outcome`` is None
  while a role is to act and a payoff for every role once none is;
- a zero-sum game's payoffs sum to 0 when the match ends by the rules (forfeits pay
  ``rules.penalty``/``rules.bonus``, which need not sum to 0);
- states round-trip through JSON and ``step`` never changes the state it is given;
- the same seed replays the same match on a fresh game object;
- ``observe`` gives the acting role a non-empty list of messages;
- ``step`` never raises on malformed text (see ``malformed_corpus``), and its verdict agrees
  with ``action_of``; obviously malformed text is invalid in every game;
- every answer from ``legal_actions`` and from each scripted player is accepted.

``free_text=True`` is for games whose move is the text itself (debate arguments, questions):
entries that presume a bracketed answer need only agree with ``action_of``; empty stays invalid.
"""

from selfplay.testing.check import (
    CheckReport,
    Playout,
    check_game,
    random_playout,
    resolve_game,
    scripted_playout,
)
from selfplay.testing.corpus import CorpusEntry, fullwidth, malformed_corpus

__all__ = [
    "CheckReport",
    "CorpusEntry",
    "Playout",
    "check_game",
    "fullwidth",
    "malformed_corpus",
    "random_playout",
    "resolve_game",
    "scripted_playout",
]
