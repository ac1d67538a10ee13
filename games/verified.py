"""The verifier of a game whose rules consult one (``uses_verifier = True``).

A run hands such a game a ``verifiers(name, options)`` factory at construction, shared by
everything in the run (the math verifier keeps a worker process); a game made without one
(a test, a script) looks its verifier up in the registry. Either way it is made once per game
object, from the game's ``verifier`` and ``verifier_options`` options.
"""

from __future__ import annotations

from typing import Any

from selfplay.api.game import Game


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
