"""Match statistics from a seat holder's point of view: results, intervals, invalid moves."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Results:
    """Win/draw/loss of one seat holder over the matches it played against someone else."""

    matches: int
    wins: int
    draws: int
    losses: int
    forfeits: int  # matches the holder lost by an invalid move
    invalid_rate: float  # invalid attempts / attempts by the holder
    mean_turns: float
    mean_action_chars: float

    @property
    def win_rate(self) -> float:
        return self.wins / self.matches if self.matches else 0.0

    @property
    def non_loss_rate(self) -> float:
        return (self.wins + self.draws) / self.matches if self.matches else 0.0

    def win_interval(self) -> tuple[float, float]:
        return wilson(self.wins, self.matches)


def results_for(holder: str, episodes: Sequence[Episode]) -> Results:
    """Results of ``holder`` in every match where it held exactly one side.

    In mirror self-play the holder sits on both sides: those matches count towards invalid
    rate and length but not towards wins, since one side's win is the other's loss.
    """
    wins = draws = losses = forfeits = counted = attempts = invalid = 0
    turns = chars = valid_turns = 0
    for ep in episodes:
        mine = [role for role, seat in ep.seats.items() if seat == holder]
        if not mine:
            continue
        turns += sum(1 for t in ep.turns if t.valid)
        for turn in ep.turns:
            if turn.role in mine:
                attempts += 1
                invalid += not turn.valid
                if turn.valid:
                    valid_turns += 1
                    chars += len(turn.text)
        if len(mine) == len(ep.seats):
            continue
        counted += 1
        role = mine[0]
        best_other = max(v for r, v in ep.outcome.items() if r != role)
        mine_payoff = ep.outcome[role]
        wins += mine_payoff > best_other
        draws += mine_payoff == best_other
        losses += mine_payoff < best_other
        forfeits += ep.state.get("forfeit") == role
    played = sum(1 for ep in episodes if holder in ep.seats.values())
    return Results(
        matches=counted,
        wins=wins,
        draws=draws,
        losses=losses,
        forfeits=forfeits,
        invalid_rate=invalid / attempts if attempts else 0.0,
        mean_turns=turns / played if played else 0.0,
        mean_action_chars=chars / valid_turns if valid_turns else 0.0,
    )


def role_outcomes(episodes: Sequence[Episode]) -> dict[str, float]:
    """Share of matches each role won, drawn share, and forfeit share (mirror self-play view)."""
    n = len(episodes) or 1
    shares: dict[str, float] = {}
    for ep in episodes:
        key = f"{ep.winner()}_wins" if ep.winner() else "draws"
        shares[key] = shares.get(key, 0.0) + 1 / n
    shares["forfeits"] = sum(1 for ep in episodes if ep.state.get("forfeit")) / n
    return shares
