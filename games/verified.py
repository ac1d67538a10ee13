"""The verifier of a game whose rules consult one (``uses_verifier = True``).

A run hands such a game a ``verifiers(name, options)`` factory at construction, shared by
everything in the run (the math verifier keeps a worker process); a game made without one
(a test, a script) looks its verifier up in the registry. Either way it is made once per game
object, from the game's ``verifier`` and ``verifier_options`` options.

A maths game's verdict is on the whole reply (``reply_verdict``): the action is still the last
span of the game's answer format, and a verifier that reads replies (the math verifier) also
holds the reply to one final answer, so a box or "answer:" line that states something else
fails it. Other verifiers see the action alone.
"""

from __future__ import annotations

from typing import Any

from selfplay.api.game import Game


def reply_verdict(game: Game, reply: str, action: str, reference: str) -> Any:
    """The verdict on ``reply``, whose action (the last answer span) is ``action``."""
    verifier = game_verifier(game)
    if getattr(verifier, "reads_replies", False):
        return verifier.verify(reply, reference, answer_pattern=game.answer_pattern)
    return verifier.verify(action, reference)


def game_verifier(game: Game) -> Any:
    made = game.__dict__.get("_verifier")
    if made is None:
        name = game.options.verifier
        options = dict(game.options.verifier_options)
        if game.verifiers is not None:
            made = game.verifiers(name, options)
        else:
            from selfplay.plugins.manager import registries

            made = registries().verifiers.get(name)(**options)
        game.__dict__["_verifier"] = made
    return made
