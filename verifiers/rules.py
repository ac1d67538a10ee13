"""The ``rules`` verifier: is a move legal in a game's current state?

``verify(text, reference, game=..., state=..., role=None)``: ``text`` is a player's output,
``reference`` is unused, ``game`` a Game instance and ``state`` its GameState (or the state's
JSON). It asks the game exactly what ``Game.step`` would: the last answer span is parsed and
checked by the game's own ``legal``. Process rewards use it to score single moves.
"""

from __future__ import annotations

from typing import Any

from selfplay.api.game import Game, GameState
from selfplay.api.verifier import Verdict, Verifier
from selfplay.plugins.hookspecs import hookimpl


class Rules(Verifier):
    """Legality of a move per the game (wraps Game.action_of, the check Game.step uses)."""

    name = "rules"

    def check(self, candidate: str, reference: str = "", **ctx: Any) -> Verdict:
        game, state = ctx.get("game"), ctx.get("state")
        if not isinstance(game, Game):
            return Verdict("error", "the rules verifier needs game=<a Game instance>")
        if isinstance(state, str):
            state = game.state_from_json(state)
        if not isinstance(state, GameState):
            return Verdict("error", "the rules verifier needs state=<a GameState or its JSON>")
        role = ctx.get("role") or game.to_act(state)
        if role is None:
            return Verdict("fail", "the match is over; no move is legal")
        action, reason = game.action_of(candidate, state, role)
        if action is None:
            return Verdict("fail", reason or "illegal move")
        return Verdict("pass", f"legal move {action!r}")


@hookimpl
def register_verifiers(register):
    register("rules", Rules)
