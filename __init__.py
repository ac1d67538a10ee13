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
from selfplay.api.objective import (
    Clip,
    EntropyCoef,
    IterationData,
    KLCoef,
    Loss,
    Objective,
    ObjectiveOptions,
    RoleLRScale,
    Scored,
    UpdateEpochs,
)
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

__version__ = "0.1.0"

__all__ = [
    "Callback",
    "Clip",
    "Completion",
    "ConfigError",
    "EntropyCoef",
    "Episode",
    "Estimator",
    "Game",
    "GameOptions",
    "GameState",
    "InvalidAction",
    "InvalidMoveRules",
    "IterationData",
    "KLCoef",
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
    "RoleLRScale",
    "RunView",
    "Sample",
    "Scored",
    "ScriptedPolicy",
    "Suite",
    "Turn",
    "UpdateEpochs",
    "Verdict",
    "Verifier",
    "__version__",
    "hookimpl",
]
