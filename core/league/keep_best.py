"""Keep-best (``pool.keep_best``): a guard against collapse.

Each new snapshot plays every other snapshot of the pool it has not met; when its mean score
against them falls more than ``pool.keep_best_margin`` below the best member's, the learner
goes back to that member's weights (and forgets its optimiser's moments). The scores are read
from the league's one payoff table (api/ratings/payoffs.py), each opponent counting alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.ratings import Payoffs
from selfplay.api.sampler import snapshot


class KeepBest:
    """Compares each new snapshot with the pool; ``restore(name)`` puts a member back."""

    def __init__(self, margin: float, payoffs: Payoffs, restore: Callable[[str], None]) -> None:
        self.margin, self.payoffs, self.restore = margin, payoffs, restore
        self.rollbacks: list[tuple[int, str]] = []  # (iteration, the snapshot restored)

    def unmet(self, iteration: int, snapshots: Sequence[str]) -> list[tuple[str, str]]:
        """The pairs the newest snapshot must still play."""
        newest = snapshot(iteration)
        return [(newest, o) for o in snapshots if o != newest and not self.payoffs.met(newest, o)]

    def judge(
        self, iteration: int, snapshots: Sequence[str], say: Callable[[str], None]
    ) -> dict[str, float]:
        """Go back to the best member when the newest scores below it by the margin; the
        row's ``pool/*`` columns."""
        newest = snapshot(iteration)
        scores = {name: self.pool_score(name, snapshots) for name in snapshots}
        row = {"pool/newest_score": scores[newest]}
        best = best_member(scores, self.margin, newest)
        if best is not None:
            self.restore(best)
            self.rollbacks.append((iteration, best))
            row["pool/rolled_back_to"] = float(snapshot_iteration(best))
            say(
                f"keep-best: snapshot {iteration} scored {scores[newest]:.2f} against the pool, "
                f"below snapshot {snapshot_iteration(best)}'s {scores[best]:.2f}; the learner "
                f"goes back to snapshot {snapshot_iteration(best)}."
            )
        top = leader(scores)
        row["pool/best_score"], row["pool/best"] = scores[top], float(snapshot_iteration(top))
        row["pool/rollbacks"] = float(len(self.rollbacks))
        return row

    def pool_score(self, name: str, snapshots: Sequence[str]) -> float:
        """``name``'s mean score (1 a win, 0.5 a draw, 0 a loss) over the other snapshots it
        met, each opponent counting alike; 0.5 with none."""
        met = [self.payoffs.score(name, other) for other in snapshots]
        means = [score for score in met if score is not None]
        return sum(means) / len(means) if means else 0.5

    def state_dict(self) -> dict[str, Any]:
        return {"rollbacks": [list(rollback) for rollback in self.rollbacks]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rollbacks = [(int(i), str(name)) for i, name in state.get("rollbacks", [])]


def best_member(scores: dict[str, float], margin: float, newest: str) -> str | None:
    """The snapshot to go back to: the best-scoring one, when ``newest`` scores more than
    ``margin`` below it (ties go to the newer snapshot); None to go on from ``newest``."""
    best = leader(scores)
    return best if scores[newest] < scores[best] - margin else None


def leader(scores: dict[str, float]) -> str:
    """The best-scoring snapshot; of equals, the newest (``scores`` lists the oldest first)."""
    order = list(scores)
    return max(order, key=lambda name: (scores[name], order.index(name)))


def snapshot_iteration(name: str) -> int:
    """12 for ``snapshot:12``."""
    return int(name.rsplit(":", 1)[-1])


def check_keep_best(config: Any) -> None:
    """``pool.keep_best`` needs snapshots and one shared policy; checked before any work."""
    pool = config.pool
    if not pool.keep_best:
        return
    if not pool.snapshot_every:
        raise ConfigError(
            "pool.keep_best compares each new snapshot with the pool, but pool.snapshot_every "
            "is 0 (no snapshots); set it, e.g. pool.snapshot_every=10."
        )
    if config.learners:
        raise ConfigError(
            "pool.keep_best puts one shared policy back to its best snapshot; a run of several "
            f"learners ({', '.join(config.learners)}) is not built for it. Drop pool.keep_best "
            "or the learners."
        )
