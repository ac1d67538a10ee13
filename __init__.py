"""selfplay: train language models by self-play.

Plugin authors need only this module: ``from selfplay import Game, GameState, hookimpl``.
"""

from __future__ import annotations

from selfplay.core.policy import MockPolicy, Policy, Request, ScriptedPolicy
from selfplay.core.types import Completion, Episode, Message, Turn
from selfplay.games.base import (
    Game,
    GameOptions,
    GameState,
    InvalidAction,
    InvalidMoveRules,
)
from selfplay.opponents.base import OpponentSampler
from selfplay.plugins.hookspecs import hookimpl
from selfplay.rewards.base import Reward
from selfplay.verifiers.base import Verdict, Verifier

__version__ = "0.1.0"

__all__ = [
    "Completion",
    "Episode",
    "Game",
    "GameOptions",
    "GameState",
    "InvalidAction",
    "InvalidMoveRules",
    "Message",
    "MockPolicy",
    "OpponentSampler",
    "Policy",
    "Request",
    "Reward",
    "ScriptedPolicy",
    "Turn",
    "Verdict",
    "Verifier",
    "__version__",
    "hookimpl",
]
