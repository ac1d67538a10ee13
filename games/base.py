"""The game contract now lives in `selfplay.api.game`;
this module keeps the import path that plugins written against 0.1 use.

New code imports from `selfplay` (the public names) or from `selfplay.api.game`.
"""

from selfplay.api.game import (
    MAX_TEXT_CHARS,
    Game,
    GameOptions,
    GameState,
    InvalidAction,
    InvalidMoveRules,
    Player,
)

__all__ = [
    "MAX_TEXT_CHARS",
    "Game",
    "GameOptions",
    "GameState",
    "InvalidAction",
    "InvalidMoveRules",
    "Player",
]
