"""selfplay: train language models by self-play.

Plugin authors need only this module: ``from selfplay import Game, GameState, hookimpl``.
"""

from __future__ import annotations

from selfplay.api.callback import Callback
from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Estimator, Sample
from selfplay.api.game import (
    Game,
    GameOptions,
    GameState,
    InvalidAction,
    InvalidMoveRules,
)
from selfplay.api.objective import IterationData, Loss, Objective, Scored
from selfplay.api.options import Options
from selfplay.api.policy import MockPolicy, Policy, Request, ScriptedPolicy
from selfplay.api.recipe import Recipe
from selfplay.api.reward import Reward
from selfplay.api.run_view import RunView
from selfplay.api.sampler import OpponentSampler
from selfplay.api.tasks import Suite
from selfplay.api.types import Completion, Episode, Message, Turn
from selfplay.api.verifier import Verdict, Verifier
from selfplay.plugins.hookspecs import hookimpl

# The base of an objective's options (every plug-in kind's ``Options`` derives from it).
ObjectiveOptions = Options

__version__ = "0.1.0"

__all__ = [
    "Callback",
    "Completion",
    "ConfigError",
    "Episode",
    "Estimator",
    "Game",
    "GameOptions",
    "GameState",
    "InvalidAction",
    "InvalidMoveRules",
    "IterationData",
    "Loss",
    "Message",
    "MockPolicy",
    "Objective",
    "ObjectiveOptions",
    "OpponentSampler",
    "Options",
    "Policy",
    "Recipe",
    "Request",
    "Reward",
    "RunView",
    "Sample",
    "Scored",
    "ScriptedPolicy",
    "Suite",
    "Turn",
    "Verdict",
    "Verifier",
    "__version__",
    "hookimpl",
]
