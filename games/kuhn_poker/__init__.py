"""Kuhn poker: three cards (J < Q < K), one private card each, one betting round.

Both players ante 1 chip. player_0 checks or bets 1; after a check player_1 checks (showdown
for a pot of 2) or bets; after any bet the other player calls (showdown for a pot of 4) or
folds. Payoffs are the chips won or lost, so the game is zero-sum with values ±1 or ±2.

The private card is the last thing in the prompt: a small model that read the card first
ignored it and played every information set alike ("always bet"); card last fixed that.

``tree`` keeps the betting tree as plain functions over (card, history) information sets,
so the exact value of any pair of strategies, and their exploitability, is computed by
enumerating the six deals instead of sampling; ``game`` is the game the run plays (prompts,
phrasings, scripted players, the TabularGame capability). Both are importable from here.

Phrasings (games/phrasing.py): ``reworded`` (the rules and both headings in other words);
``obfuscated``, a contest of three tokens ranked ivy < elm < oak whose moves are [wait],
[push], [meet] and [quit], never named poker; ``no-menu``, the rules with the moves named but
no move in brackets, and no list of the legal ones.
"""

from selfplay.games.kuhn_poker.game import (
    MOVES,
    NO_MENU_RULES,
    OBFUSCATED_RULES,
    REWORDED_WORDS,
    RULES,
    SEATS,
    SPIEL_ACTIONS,
    TOKENS,
    KuhnPoker,
    KuhnPokerOptions,
    KuhnPokerState,
    nash_player,
    random_player,
    register_games,
)
from selfplay.games.kuhn_poker.tree import (
    CARDS,
    GAME_VALUE,
    NASH_ALPHA,
    RANK,
    ROLES,
    History,
    Prob,
    Strategy,
    best_response_value,
    expected_payoffs,
    info_set,
    info_sets,
    is_terminal,
    legal_moves,
    nash_conv,
    nash_probabilities,
    payoffs,
    role_to_act,
    strategy_table,
    table_strategy,
    uniform_probabilities,
)

__all__ = [
    "CARDS",
    "GAME_VALUE",
    "MOVES",
    "NASH_ALPHA",
    "NO_MENU_RULES",
    "OBFUSCATED_RULES",
    "RANK",
    "REWORDED_WORDS",
    "ROLES",
    "RULES",
    "SEATS",
    "SPIEL_ACTIONS",
    "TOKENS",
    "History",
    "KuhnPoker",
    "KuhnPokerOptions",
    "KuhnPokerState",
    "Prob",
    "Strategy",
    "best_response_value",
    "expected_payoffs",
    "info_set",
    "info_sets",
    "is_terminal",
    "legal_moves",
    "nash_conv",
    "nash_player",
    "nash_probabilities",
    "payoffs",
    "random_player",
    "register_games",
    "role_to_act",
    "strategy_table",
    "table_strategy",
    "uniform_probabilities",
]
