"""selfplay: train language models by self-play.

Plugin authors need only this module: ``from selfplay import Game, GameState, hookimpl``.
"""

from __future__ import annotations

from selfplay.api.game import (
    Game,
    GameOptions,
    GameState,
    InvalidAction,
    InvalidMoveRules,
)
from selfplay.api.policy import MockPolicy, Policy, Request, ScriptedPolicy
from selfplay.api.reward import Reward
from selfplay.api.sampler import OpponentSampler
from selfplay.api.types import Completion, Episode, Message, Turn
from selfplay.api.verifier import Verdict, Verifier
from selfplay.plugins.hookspecs import hookimpl

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
