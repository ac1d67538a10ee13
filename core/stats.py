"""Match statistics shared by the loop and the evaluation: intervals and outcome shares."""

from __future__ import annotations

import math
from collections.abc import Sequence

from selfplay.core.types import Episode


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0, 1) when there is no data."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def role_outcomes(episodes: Sequence[Episode]) -> dict[str, float]:
    """Share of matches each role won, drawn share, and forfeit share (mirror self-play view)."""
    n = len(episodes) or 1
    shares: dict[str, float] = {}
    for ep in episodes:
        key = f"{ep.winner()}_wins" if ep.winner() else "draws"
        shares[key] = shares.get(key, 0.0) + 1 / n
    shares["forfeits"] = sum(1 for ep in episodes if ep.state.get("forfeit")) / n
    return shares
