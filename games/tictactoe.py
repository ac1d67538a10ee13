"""Tic-tac-toe: two roles, x (player_0) moves first, three in a row wins, a full board draws.

The board is shown with every empty cell as its own digit (``x1o|345|678``): a small model then
learns legality by copying a visible token. Shown with dots instead, a cold-started model never
linked digit i to cell i and stayed almost always invalid.

Phrasings (games/phrasing.py), each with the compact board and without: ``reworded`` says the
rules and the question in other words and puts the mark first on the compact line (``x to
move on x1o|345|678``); ``obfuscated`` is a game of claiming squares labelled ``j``-``s`` with
stones ``#`` and ``@``, never named tic-tac-toe (``j#l|m@p|qrs @``), answered ``[n]``;
``no-menu`` shows free cells as ``.`` and gives no example answer, so the move's number comes
from the rules alone.
"""

from __future__ import annotations

import random
from functools import cache
from typing import ClassVar

from pydantic import Field

from selfplay.api.game import DEFAULT_PHRASING as DEFAULT
from selfplay.api.game import (
    NO_MENU,
    OBFUSCATED,
    REWORDED,
    Game,
    GameOptions,
    GameState,
    InvalidAction,
    Player,
)
from selfplay.api.types import Episode, Message, Payoffs, Role
from selfplay.games.move_names import read_name
from selfplay.games.phrasing import Renaming
from selfplay.plugins.hookspecs import hookimpl

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
MARKS = {"player_0": "x", "player_1": "o"}
RULES = {
    DEFAULT: "You are playing tic-tac-toe. Cells are numbered 0-8 row by row; an empty cell shows "
    "its number. Three of your marks in a row, column or diagonal wins. Answer with the number "
    "of an empty cell in square brackets, for example [4].",
    REWORDED: "Game: tic-tac-toe on a 3x3 grid. The cells are numbered 0 to 8, left to right and "
    "top to bottom, and a free cell displays its number. You win by getting three of your "
    "marks in one row, column or diagonal. Reply with a free cell's number inside square "
    "brackets, such as [4].",
    OBFUSCATED: "A two-player game of claiming squares on a 3 by 3 grid. The squares are labelled "
    "j to s, row by row from the top left, and a free square shows its label. Players take "
    "turns claiming one free square: # claims first, @ second. Whoever first holds three "
    "squares along one row, one column or one diagonal wins; a full grid with no such line is "
    "a tie. Reply with the label of a free square in square brackets, for example [n].",
    NO_MENU: "You are playing tic-tac-toe. Cells are numbered 0-8 row by row; an empty cell shows "
    "'.'. Three of your marks in a row, column or diagonal wins. Answer with the number of an "
    "empty cell in square brackets.",
}
# what the player is asked: (the full question, the compact line), by phrasing
ASKED = {
    DEFAULT: ("Board {board}. You are {mark}. Your move?", "{board} {mark}"),
    REWORDED: (
        "Board {board}. You are {mark}. Which cell do you take?",
        "{mark} to move on {board}",
    ),
    OBFUSCATED: ("Grid {board}. Your stone: {mark}. Which square do you claim?", "{board} {mark}"),
    NO_MENU: ("Board {board}. You are {mark}. Your move?", "{board} {mark}"),
}
# obfuscated: cells, marks and the board's free cells renamed (one character each)
LABELS = Renaming(dict(zip("012345678", "jklmnpqrs", strict=True)))
STONES = Renaming({"x": "#", "o": "@"})


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


def render(board: str, phrasing: str = DEFAULT) -> str:
    """The board in a phrasing: a free cell shows its number (its label when obfuscated, a
    dot with no menu)."""
    cells = [mark if mark != "." else str(i) for i, mark in enumerate(board)]
    if phrasing == OBFUSCATED:
        cells = [STONES.spell(LABELS.spell(c)) for c in cells]
    elif phrasing == NO_MENU:
        cells = list(board)
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
    values = game.move_values(state, role)
    best = max(values.values())
    return game.answer(rng.choice([i for i, v in values.items() if v == best]))


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
    # every phrasing is written by `prompt` (with the compact board too)
    phrasings: ClassVar[dict[str, dict[str, str]]] = {REWORDED: {}, OBFUSCATED: {}, NO_MENU: {}}

    def initial(self, seed: int, rng: random.Random) -> TicTacToeState:
        return TicTacToeState(seed=seed)

    def current_role(self, state: TicTacToeState) -> Role | None:
        if winner(state.board) or "." not in state.board:
            return None
        return "player_0" if state.board.count("x") == state.board.count("o") else "player_1"

    def prompt(self, state: TicTacToeState, role: Role) -> list[Message]:
        phrasing = self.options.phrasing
        board, mark = render(state.board, phrasing), MARKS[role]
        if phrasing == OBFUSCATED:
            mark = STONES.spell(mark)
        asked = ASKED[phrasing][1 if self.options.compact else 0]
        return [
            Message("system", RULES[phrasing]),
            Message("user", asked.format(board=board, mark=mark)),
        ]

    def spelled(self, action: str) -> str:
        return LABELS.spell(action) if self.options.phrasing == OBFUSCATED else action

    def legal(self, state: TicTacToeState, role: Role, action: str) -> str:
        if self.options.phrasing == OBFUSCATED:
            cell = LABELS.read(action)
            if cell is None:
                raise InvalidAction(f"{action[:20]!r} is not a square's label j-s.")
            if state.board[int(cell)] != ".":
                raise InvalidAction(f"square {LABELS.spell(cell)} is already claimed.")
            return cell
        cell = read_name(action)
        if len(cell) != 1 or cell not in "012345678":
            raise InvalidAction(f"{action[:20]!r} is not a cell number 0-8.")
        if state.board[int(cell)] != ".":
            raise InvalidAction(f"cell {cell} is already taken.")
        return cell

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

    # ---- OpenSpiel's tic_tac_toe: the same cells, numbered the same (api/tasks.py) ----------

    def spiel_game(self) -> str:
        return "tic_tac_toe()"

    def spiel_actions(self, episode: Episode) -> list[tuple[int, int]]:
        return [
            (self.roles.index(turn.role), int(turn.action))
            for turn in episode.turns
            if turn.valid and turn.action is not None
        ]

    def legal_actions(self, state: TicTacToeState, role: Role) -> list[str]:
        return [self.answer(str(i)) for i, c in enumerate(state.board) if c == "."]

    def move_values(self, state: TicTacToeState, role: Role) -> dict[str, int]:
        """Each legal move's exact value for ``role`` (minimax: +1 win, 0 draw, -1 loss),
        by action; the ``move-value`` reward scores a move by what it keeps."""
        mark = MARKS[role]
        other = "o" if mark == "x" else "x"
        return {
            str(i): -minimax_value(state.board[:i] + mark + state.board[i + 1 :], other)
            for i, c in enumerate(state.board)
            if c == "."
        }


@hookimpl
def register_games(register):
    register(TicTacToe)
