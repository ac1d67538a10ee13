"""Short rules of the OpenSpiel games we document, written for a player reading its prompt.

Each text explains what OpenSpiel's own information-state or observation string shows for that
game (often terse: Kuhn poker's is a card number and ``p``/``b`` letters), since the prompt
shows that string as it is; for a game with a readable view (games/openspiel/views.py) that
explanation is in `SPIEL_NOTES`, said only when the string is shown. A game without an entry
gets `generic_rules`.
"""

from __future__ import annotations

RULES = {
    "kuhn_poker": (
        "Kuhn poker. The deck has three cards: 0 (Jack) < 1 (Queen) < 2 (King). Each player "
        "antes 1 chip and gets one private card. Player 0 acts first: Pass (check) or Bet "
        "(1 chip). After a pass, player 1 may Pass (showdown for the pot) or Bet. After a bet, "
        "the other player must Bet (call) or Pass (fold, losing the pot to the bettor). At a "
        "showdown the higher card wins. Your information state is your card, then the actions "
        "so far: p = pass, b = bet (e.g. '2pb': you hold the King, pass then bet)."
    ),
    "leduc_poker": (
        "Leduc poker. The deck has six cards, two suits of three ranks (Jack, Queen, King). "
        "Each player antes 1 chip and gets one private card. There are two betting rounds; "
        "after the first, one public card is dealt. In a round a player may Call (check or "
        "call), Raise (2 chips in round 1, 4 in round 2; at most two raises a round) or Fold. "
        "At the showdown a pair with the public card wins, otherwise the higher private card; "
        "equal ranks split the pot."
    ),
    "liars_dice": (
        "Liar's dice. Each player rolls dice that only they can see. Players take turns bidding "
        "'Q-F': at least Q dice among all players' dice show face F (a 6 is wild and counts as "
        "any face). Each bid must be higher than the last (more dice, or the same number of a "
        "higher face). Instead of bidding you may call Liar on the last bid: if the bid holds, "
        "the caller loses; otherwise the bidder loses. Your information state lists your dice "
        "faces, then the bids so far."
    ),
    "tic_tac_toe": (
        "Tic-tac-toe on a 3x3 board. Player 0 is x and moves first, player 1 is o. Three of "
        "your marks in a row, column or diagonal wins; a full board is a draw. The board is "
        "shown row by row with '.' for an empty cell; an action 'x(r,c)' marks row r, column c "
        "(counted from 0, top left)."
    ),
    "connect_four": (
        "Connect Four on a board of 6 rows and 7 columns. Player 0 is x and moves first, "
        "player 1 is o. A move drops your disc into a column (numbered 0-6 from the left); it "
        "falls to the lowest empty cell. Four of your discs in a row, column or diagonal wins; "
        "a full board is a draw. The board is shown top row first with '.' for empty cells; the "
        "action 'x3' drops an x into column 3."
    ),
    "bargaining": (
        "Bargaining (a general-sum negotiation). A pool of books, hats and basketballs is to be "
        "divided between two players, who value each item differently; you see only your own "
        "values. Players take turns: make an offer (the items you would keep) or Agree to the "
        "other player's last offer. On agreement each player scores the value of the items "
        "they get; if no agreement is reached in time, both score 0. Your information state "
        "shows the pool, your values and the offers so far."
    ),
}


# What OpenSpiel's own string shows, for the games whose rules above leave it out because
# they have a readable view (games/openspiel/views.py); said when ``view: spiel`` shows it.
SPIEL_NOTES = {
    "leduc_poker": (
        "Your information state shows your private card and the public card as numbers (rank "
        "= number // 2, so 0-1 Jack, 2-3 Queen, 4-5 King), the pot, and each round's actions "
        "(1 = call, 2 = raise)."
    ),
}


def rules_text(short_name: str, long_name: str) -> str:
    """The rules of ``short_name`` as OpenSpiel's string shows it, or a generic description."""
    if short_name not in RULES:
        return generic_rules(short_name, long_name)
    note = SPIEL_NOTES.get(short_name)
    return f"{RULES[short_name]} {note}" if note else RULES[short_name]


def generic_rules(short_name: str, long_name: str) -> str:
    return (
        f"You are playing {long_name} (OpenSpiel's game '{short_name}') under its usual rules. "
        "The state is shown as OpenSpiel describes it."
    )
