"""Hide-the-coin: the hider puts a coin in one hand, the guesser names a hand."""

from __future__ import annotations

import random

from selfplay import Game, GameState, InvalidAction, Message, hookimpl


class CoinState(GameState):
    hand: str | None = None
    guess: str | None = None


def random_player(game, state, role, rng: random.Random) -> str:
    return rng.choice(["[left]", "[right]"])


class CoinGame(Game):
    name = "coin-guess"
    roles = ("hider", "guesser")
    description = "The hider hides a coin in [left] or [right]; the guesser wins by naming it."
    State = CoinState
    players = {"random": random_player}

    def initial(self, seed, rng):
        return CoinState(seed=seed)

    def current_role(self, state):
        if state.hand is None:
            return "hider"
        return "guesser" if state.guess is None else None

    def prompt(self, state, role):
        task = "Hide the coin" if role == "hider" else "Guess the hand"
        return [Message("user", f"{task}: answer [left] or [right].")]

    def legal(self, state, role, action):
        if action.lower() not in ("left", "right"):
            raise InvalidAction(f"{action[:20]!r} is not left or right.")
        return action.lower()

    def apply(self, state, role, action):
        key = "hand" if role == "hider" else "guess"
        return state.model_copy(update={key: action})

    def result(self, state):
        if state.guess is None:
            return None
        won = state.guess == state.hand
        return {"hider": -1.0 if won else 1.0, "guesser": 1.0 if won else -1.0}

    def legal_actions(self, state, role):
        return ["[left]", "[right]"]


@hookimpl
def register_games(register):
    register(CoinGame)
