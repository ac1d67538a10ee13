"""Built-in plug-ins. They register through the same hooks as third-party plugins."""

from __future__ import annotations

DEFAULT_PLUGINS = (
    "selfplay.games.tictactoe",
    "selfplay.games.kuhn_poker",
    "selfplay.games.rock_paper_scissors",
    "selfplay.games.negotiation",
    "selfplay.games.textarena.adapter",
    "selfplay.games.debate",
    "selfplay.games.challenger_solver",
    "selfplay.games.math_proposer_solver",
    "selfplay.games.proposer_solver_judge",
    "selfplay.core.models.builtin",
    "selfplay.rewards.outcome",
    "selfplay.rewards.format",
    "selfplay.rewards.process",
    "selfplay.rewards.game_signal",
    "selfplay.rewards.length",
    "selfplay.rewards.novelty",
    "selfplay.rewards.judge",
    "selfplay.rewards.quality",
    "selfplay.verifiers.math_verifier",
    "selfplay.verifiers.basic",
    "selfplay.verifiers.code_verifier",
    "selfplay.verifiers.rules",
    "selfplay.opponents.basic",
    "selfplay.opponents.pool",
    "selfplay.opponents.psro",
    "selfplay.opponents.elo",
    "selfplay.core.algorithms.registry",
    "selfplay.monitors.builtin",
)
