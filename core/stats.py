"""Match statistics shared by the loop and the evaluation: intervals and outcome shares."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from selfplay.api.sampler import is_learner
from selfplay.api.types import Episode


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
    """Share of matches each role won, drawn share, and forfeit share (mirror self-play view).

    In a one-role game (a solver alone) there is no one to beat: the role wins a match with a
    positive payoff, loses it with a negative one (``<role>_losses``), and 0 is a draw.
    """
    n = len(episodes) or 1
    shares: dict[str, float] = {}
    for ep in episodes:
        for key in _results(ep):  # every outcome the match could have had: 0 where none did
            shares.setdefault(key, 0.0)
        shares[_result(ep)] += 1 / n
    shares["forfeits"] = sum(1 for ep in episodes if ep.state.get("forfeit")) / n
    return shares


def _results(episode: Episode) -> tuple[str, ...]:
    """The keys `_result` can give a match of this episode's roles."""
    if len(episode.outcome) == 1:
        (role,) = episode.outcome
        return f"{role}_wins", f"{role}_losses", "draws"
    return (*(f"{role}_wins" for role in episode.outcome), "draws")


def _result(episode: Episode) -> str:
    if len(episode.outcome) == 1:
        ((role, payoff),) = episode.outcome.items()
        return f"{role}_wins" if payoff > 0 else f"{role}_losses" if payoff < 0 else "draws"
    winner = episode.winner()
    return f"{winner}_wins" if winner else "draws"


def episode_metrics(
    episodes: Sequence[Episode], scores: Sequence[dict], reduce: Callable[[Any], Any]
) -> dict[str, float]:
    """The learner's match statistics for metrics.csv, summed over processes by ``reduce``.

    Branch matches (core/train/branching.py) are counted apart: the rest describe full matches.
    """
    branches = sum("branch" in ep.extra for ep in episodes)
    scores = [s for ep, s in zip(episodes, scores, strict=True) if "branch" not in ep.extra]
    episodes = [ep for ep in episodes if "branch" not in ep.extra]
    turns = [t for ep in episodes for t in ep.turns if is_learner(t.seat)]
    learner_scores = [
        v
        for ep, per_role in zip(episodes, scores, strict=True)
        for role, v in per_role.items()
        if v is not None and math.isfinite(v) and is_learner(ep.seats[role])
    ]
    local = torch.tensor(
        [
            len(episodes),
            sum(not t.valid for t in turns),
            len(turns),
            sum(learner_scores),
            len(learner_scores),
            sum(len(t.token_ids) for t in turns),
            branches,
        ],
        dtype=torch.float64,
    )
    total = reduce(local)
    n, invalid, attempts, score_sum, score_n, tokens, branches = total.tolist()
    row = {
        "matches": int(n),
        "mean_reward": score_sum / max(score_n, 1),
        "invalid_rate": invalid / max(attempts, 1),
        "learner_turns": int(attempts),
        "generated_tokens": int(tokens),
    }
    if branches:
        row["branch_matches"] = int(branches)
    row.update({f"share/{k}": v for k, v in role_outcomes(episodes).items()})
    row.update(signal_means(episodes))
    return row


def signal_means(episodes: Sequence[Episode]) -> dict[str, float]:
    """``signal/NAME``: the mean of each of the game's signals (`Game.signals`: turns, invalid
    attempts, a judge's agreement, ...) over the matches that report it; like the shares, over
    this process's matches."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for episode in episodes:
        for name, value in episode.signals.items():
            if isinstance(value, (int, float)) and math.isfinite(value):
                sums[name] = sums.get(name, 0.0) + float(value)
                counts[name] = counts.get(name, 0) + 1
    return {f"signal/{name}": sums[name] / counts[name] for name in sorted(sums)}
