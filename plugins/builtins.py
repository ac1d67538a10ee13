"""Built-in plug-ins. They register through the same hooks as third-party plugins."""

from __future__ import annotations

DEFAULT_PLUGINS = (
    "selfplay.games.tictactoe",
    "selfplay.games.kuhn_poker",
    "selfplay.games.rock_paper_scissors",
    "selfplay.games.negotiation",
    "selfplay.core.builtin_models",
    "selfplay.rewards.outcome",
    "selfplay.opponents.basic",
    "selfplay.core.algorithms.registry",
)
