"""The reward contract now lives in `selfplay.api.reward`;
this module keeps the import path that plugins written against 0.1 use.

New code imports from `selfplay` (the public names) or from `selfplay.api.reward`.
"""

from selfplay.api.reward import (
    EpisodeScores,
    Reward,
    RewardContext,
    RewardError,
    RewardOptions,
    RoleScores,
    TurnScores,
)

__all__ = [
    "EpisodeScores",
    "Reward",
    "RewardContext",
    "RewardError",
    "RewardOptions",
    "RoleScores",
    "TurnScores",
]
