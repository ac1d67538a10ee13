"""The phrasings of OpenSpiel games (games/phrasing.py): reworded, obfuscated, no menu.

``reworded`` says the answer rule and the headings in other words (`REWORDED`); the rules
text stays. ``no-menu`` drops the line of legal actions and the example answer; the rules then
say how a move is written (`MOVE_FORMATS`, for the games that have rules here or that the
evaluation suites play; other games have no such phrasing). ``obfuscated`` plays the same game
tree under other names (`DISGUISES`): rules that never name the game, and the state the player
sees and the name of every move renamed the same way (tic-tac-toe's ``x(1,1)`` is ``#b2``,
its board's ``x`` a ``#``), so an answer in the new names is read back to OpenSpiel's move. A
disguise is written for one game string with its default parameters (``nim``'s four piles,
misère), because its rules state them; other strings have no obfuscated phrasing.

For nim, first_sealed_auction and matrix_pd, whose default prompt names the game and says only
"under its usual rules", the obfuscated rules say more than the default ones do: a gap between
the two phrasings there mixes recall with the missing rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# The answer rule and headings in other words; the rules text stays.
REWORDED = {
    "Answer with exactly one of the legal actions in square brackets, for example ": (
        "Reply with a single legal action written inside square brackets, such as "
    ),
    "; the last bracketed part of your reply is taken as your action.": (
        ". Only the final bracketed text of your reply counts as your move."
    ),
    "Legal actions: ": "Moves you may play: ",
}

# The answer rule with no example.
NO_MENU_RULE = (
    "Answer with exactly one legal action in square brackets; the last bracketed part of your "
    "reply is taken as your action."
)
# How a move is written, said where the rules do not say it; by game string.
MOVE_FORMATS = {
    "tic_tac_toe": "",
    "connect_four": "",
    "kuhn_poker": "",
    "leduc_poker": "",
    "liars_dice": "",
    "bargaining": "An offer is written 'Offer: Book: B, Hat: H, Basketball: K' with the number "
    "of each item you would keep; accepting is written 'Agree'.",
    "nim": "A move is written 'pile:P, take:N;': take N objects from pile P (piles are "
    "numbered from 1).",
    "first_sealed_auction": "A bid is written 'Player P bid: N': your player number P, then "
    "your bid N.",
    "matrix_pd": "The two actions are written 'Cooperate' and 'Defect'.",
}
# The rules' own example moves, made general for no-menu.
NO_MENU_EDITS = {
    "the action 'x3' drops an x into column 3": "the action 'xN' drops an x into column N"
}


@dataclass(frozen=True)
class Disguise:
    """A game under other names: its rules, and one renaming of what the player sees of the
    state and of each move's name."""

    rules: str
    rename: Callable[[str], str]


def _characters(table: dict[str, str]) -> Callable[[str], str]:
    return lambda text: text.translate(str.maketrans(table))


def _words(*pairs: tuple[str, str]) -> Callable[[str], str]:
    def rename(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    return rename


STONES = {"x": "#", "o": "@", ".": "-"}


def _tic_tac_toe(text: str) -> str:
    cell = re.sub(
        r"([xo])\((\d),(\d)\)", lambda m: f"{m[1]}{'abc'[int(m[3])]}{int(m[2]) + 1}", text
    )
    return cell.translate(str.maketrans(STONES))


def _connect_four(text: str) -> str:
    column = re.sub(r"\b([xo])(\d)\b", lambda m: f"{m[1]}{'abcdefg'[int(m[2])]}", text)
    return column.translate(str.maketrans(STONES))


DISGUISES = {
    "tic_tac_toe": Disguise(
        "A two-player game of claiming squares on a 3 by 3 grid. The first player places # "
        "stones, the second @ stones, one stone a turn on a free square. Three of your stones "
        "along a row, a column or a diagonal wins; a full grid without such a line is a tie. "
        "The grid is shown row by row with '-' for a free square. A move is your stone, then "
        "the square's column a-c from the left and its row 1-3 from the top: '#b2' puts a # "
        "in the middle.",
        _tic_tac_toe,
    ),
    "connect_four": Disguise(
        "A two-player game of dropping stones into an upright grid of 6 rows and 7 columns, "
        "the columns labelled a to g from the left. The first player drops # stones, the "
        "second @ stones; a stone falls to the lowest free cell of its column. Four of your "
        "stones along a row, a column or a diagonal wins; a full grid is a tie. The grid is "
        "shown top row first with '-' for a free cell; the move '#d' drops a # into column d.",
        _connect_four,
    ),
    "kuhn_poker": Disguise(
        "A two-player contest of three tokens ranked q < z < w (w highest). Each player puts 1 "
        "chip in the pot and gets one token that only they see. Player 0 moves first: Stay, or "
        "Up (1 more chip). After a Stay, player 1 may Stay (reveal) or go Up. After an Up, the "
        "other player must go Up (match the chip, then reveal) or Stay (the pot goes to the "
        "one who went up). At a reveal the higher token takes the pot. Your information state "
        "is your token, then the moves so far: s = Stay, u = Up (e.g. 'wsu': you hold w, "
        "Stay then Up).",
        lambda text: _words(("Pass", "Stay"), ("Bet", "Up"))(
            _characters({"0": "q", "1": "z", "2": "w", "p": "s", "b": "u"})(text)
        ),
    ),
    "leduc_poker": Disguise(
        "A two-player betting contest with six tokens, two of each of three kinds ranked ivy < "
        "elm < oak (oak highest). Each player puts 1 chip in the pot and gets one token that "
        "only they see. There are two stages; after the first, one shared token is turned face "
        "up. In a stage a player may Meet (match what is owed, or wait when nothing is), Push "
        "(2 chips more in stage 1, 4 in stage 2; at most two pushes a stage) or Quit (give up "
        "the pot). At the reveal, a token of the same kind as the shared one wins; otherwise "
        "the higher kind wins; equal kinds split the pot. You are shown the stage, the pot, "
        "each player's chips, each stage's moves so far, the shared token once turned, and your "
        "own token.",
        _words(
            ("Round", "Stage"),
            (" bets:", " moves:"),
            ("Public card", "Shared token"),
            ("not dealt yet", "not turned yet"),
            ("Your card", "Your token"),
            ("Jack", "ivy"),
            ("Queen", "elm"),
            ("King", "oak"),
            ("Call", "Meet"),
            ("Raise", "Push"),
            ("Fold", "Quit"),
            ("call", "meet"),
            ("raise", "push"),
            ("fold", "quit"),
        ),
    ),
    "liars_dice": Disguise(
        "A bluffing game of hidden six-sided dice. Each player rolls dice that only they can "
        "see. Players take turns claiming 'Q of F': at least Q dice among all players' dice "
        "show face F (a 6 counts as any face). Each claim must be higher than the last (more "
        "dice, or as many of a higher face). Instead of claiming you may Doubt the last claim: "
        "if it holds, the doubter loses; otherwise the claimer loses. Your information state "
        "lists your dice faces, then the claims so far.",
        lambda text: re.sub(r"(\d+)-(\d+)", r"\1 of \2", text.replace("Liar", "Doubt")),
    ),
    "nim": Disguise(
        "A removal game with four stacks of tokens, of 1, 3, 5 and 7 at the start. Players take "
        "turns removing one or more tokens from a single stack; whoever removes the last token "
        "loses. The state shows the player to move in parentheses, then the size of each "
        "stack. The move 'from S remove N' removes N tokens from stack S (stacks are numbered "
        "from 1).",
        lambda text: re.sub(r"pile:(\d+), take:(\d+);", r"from \1 remove \2", text),
    ),
    "bargaining": Disguise(
        "A general-sum sharing game for two. A heap of ambers, slates and corals is to be "
        "shared; each player values each kind differently and sees only their own worths. "
        "Players take turns: propose a split (the items you would keep) or Accept the other "
        "player's last split. On acceptance each player scores the worth of the items they "
        "get; with no acceptance in time, both score 0. Your information state shows the "
        "heap, your worths and the splits so far.",
        _words(
            ("Agreement reached?", "Settled?"),
            ("Agree", "Accept"),
            ("Offer", "Split"),
            ("offers", "splits"),
            ("Pool", "Heap"),
            ("My values", "My worths"),
            ("Basketball", "Coral"),
            ("Book", "Amber"),
            ("Hat", "Slate"),
        ),
    ),
    "first_sealed_auction": Disguise(
        "A one-shot game of sealed offers for two. Each player privately learns a worth from 1 "
        "to 10, then names an offer from 0 to one less than that worth, unseen by the other. "
        "The higher offer wins and scores its worth minus its offer; the other scores 0; equal "
        "offers are settled at random. Your information state shows your worth.",
        _words(("val", "worth"), ("bid:", "offers")),
    ),
    "matrix_pd": Disguise(
        "A one-shot game for two: each player picks Left or Right without seeing the other's "
        "pick. Both Left: 5 points each. Both Right: 1 point each. Right against Left: 10 for "
        "the one who picked Right, 0 for the other.",
        _words(("Cooperate", "Left"), ("Defect", "Right")),
    ),
}
