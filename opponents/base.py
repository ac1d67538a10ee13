"""The opponent-sampler contract now lives in `selfplay.api.sampler`;
this module keeps the import path that plugins written against 0.1 use.

New code imports from `selfplay` (the public names) or from `selfplay.api.sampler`.
"""

from selfplay.api.sampler import (
    LEARNER,
    SNAPSHOT,
    OpponentSampler,
    is_snapshot,
    scripted,
    snapshot,
)

__all__ = [
    "LEARNER",
    "SNAPSHOT",
    "OpponentSampler",
    "is_snapshot",
    "scripted",
    "snapshot",
]
