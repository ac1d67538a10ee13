"""The verifier contract now lives in `selfplay.api.verifier`;
this module keeps the import path that plugins written against 0.1 use.

New code imports from `selfplay` (the public names) or from `selfplay.api.verifier`.
"""

from selfplay.api.verifier import (
    MAX_DETAIL_CHARS,
    STATUSES,
    Status,
    Verdict,
    Verifier,
    VerifierOptions,
)

__all__ = [
    "MAX_DETAIL_CHARS",
    "STATUSES",
    "Status",
    "Verdict",
    "Verifier",
    "VerifierOptions",
]
