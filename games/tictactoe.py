"""Tic-tac-toe: two roles, x (player_0) moves first, three in a row wins, a full board draws.

The board is shown with every empty cell as its own digit (``x1o|345|678``): a small model then
learns legality by copying a visible token. Shown with dots instead, a cold-started model never
linked digit i to cell i and stayed almost always invalid.
"""

from __future__ import annotations

import random
from functools import cache
from typing import ClassVar

from pydantic import Field

from selfplay.api.game import Game, GameOptions, GameState, InvalidAction, Player
from selfplay.api.types import Message, Payoffs, Role
from selfplay.plugins.hookspecs import hookimpl

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
MARKS = {"player_0": "x", "player_1": "o"}
RULES = (
    "You are playing tic-tac-toe. Cells are numbered 0-8 row by row; an empty cell shows its "
    "number. Three of your marks in a row, column or diagonal wins. Answer with the number of "
    "an empty cell in square brackets, for example [4]."
)
# The same rules and answer format in other words (`Game.phrasings`).
REWORDED = {
    RULES: "Game: tic-tac-toe on a 3x3 grid. The cells are numbered 0 to 8, left to right and "
    "top to bottom, and a free cell displays its number. You win by getting three of your "
    "marks in one row, column or diagonal. Reply with a free cell's number inside square "
    "brackets, such as [4].",
    "Your move?": "Which cell do you take?",
}


class TicTacToeOptions(GameOptions):
    max_turns: int = Field(
        default=9, ge=1, le=9, description="Moves before a draw (9 = full board)."
    )
    compact: bool = Field(
        default=False,
        description="Ask with only the board and your mark ('x1o|345|678 o'): about 2.5x "
        "fewer tokens per turn for a small model that cannot read the sentence anyway.",
    )


class TicTacToeState(GameState):
    board: str = "........."  # 'x', 'o' or '.' per cell


def winner(board: str) -> str | None:
    for a, b, c in LINES:
        if board[a] != "." and board[a] == board[b] == board[c]:
            return board[a]
    return None


def render(board: str) -> str:
    cells = [mark if mark != "." else str(i) for i, mark in enumerate(board)]
    return "|".join("".join(cells[row : row + 3]) for row in (0, 3, 6))


@cache
def minimax_value(board: str, mark: str) -> int:
    """Value of ``board`` for the player ``mark`` who is to move: +1 win, 0 draw, -1 loss."""
    won = winner(board)
    if won is not None:
        return 1 if won == mark else -1
    empty = [i for i, c in enumerate(board) if c == "."]
    if not empty:
        return 0
    other = "o" if mark == "x" else "x"
    return max(-minimax_value(board[:i] + mark + board[i + 1 :], other) for i in empty)


def random_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    return rng.choice(game.legal_actions(state, role))


def minimax_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    """Perfect play; ties between equally good moves are broken at random."""
    board, mark = state.board, MARKS[role]
    other = "o" if mark == "x" else "x"
    empty = [i for i, c in enumerate(board) if c == "."]
    values = {i: -minimax_value(board[:i] + mark + board[i + 1 :], other) for i in empty}
    best = max(values.values())
    return f"[{rng.choice([i for i, v in values.items() if v == best])}]"


class TicTacToe(Game):
    name = "tictactoe"
    roles = ("player_0", "player_1")
    description = "Tic-tac-toe on a 3x3 board; x moves first; answer with a cell number like [4]."
    Options = TicTacToeOptions
    State = TicTacToeState
    answer_hint = "[4] (a cell number in square brackets)"
    perfect_information = True
    lists_every_move = True
    # its own run settings: search targets, small minibatches, the compact prompt
    # (recipes/tictactoe.py)
    recipe = "tictactoe"
    players: ClassVar[dict[str, Player]] = {"random": random_player, "minimax": minimax_player}
    phrasings: ClassVar[dict[str, dict[str, str]]] = {"reworded": REWORDED}

    def initial(self, seed: int, rng: random.Random) -> TicTacToeState:
        return TicTacToeState(seed=seed)

    def current_role(self, state: TicTacToeState) -> Role | None:
        if winner(state.board) or "." not in state.board:
            return None
        return "player_0" if state.board.count("x") == state.board.count("o") else "player_1"

    def prompt(self, state: TicTacToeState, role: Role) -> list[Message]:
        board = render(state.board)
        if self.options.compact:
            return [Message("system", RULES), Message("user", f"{board} {MARKS[role]}")]
        return [
            Message("system", RULES),
            Message("user", f"Board {board}. You are {MARKS[role]}. Your move?"),
        ]

    def legal(self, state: TicTacToeState, role: Role, action: str) -> str:
        if len(action) != 1 or action not in "012345678":
            raise InvalidAction(f"{action[:20]!r} is not a cell number 0-8.")
        if state.board[int(action)] != ".":
            raise InvalidAction(f"cell {action} is already taken.")
        return action

    def apply(self, state: TicTacToeState, role: Role, action: str) -> TicTacToeState:
        i = int(action)
        board = state.board[:i] + MARKS[role] + state.board[i + 1 :]
        return state.model_copy(update={"board": board})

    def result(self, state: TicTacToeState) -> Payoffs | None:
        won = winner(state.board)
        if won is not None:
            return {r: (1.0 if MARKS[r] == won else -1.0) for r in self.roles}
        if "." not in state.board:
            return dict.fromkeys(self.roles, 0.0)
        return None

    def legal_actions(self, state: TicTacToeState, role: Role) -> list[str]:
        return [f"[{i}]" for i, c in enumerate(state.board) if c == "."]


@hookimpl
def register_games(register):
    register(TicTacToe)
