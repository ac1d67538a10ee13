"""The league: the pool of past selves, their ratings and results, and exact exploitability.

The trainer hands the league every finished match. The league keeps

- the pool (for samplers with ``uses_pool``): a snapshot of the learner every
  ``pool.snapshot_every`` iterations, written to ``<run folder>/pool/`` and loaded on demand
  (or, with ``pool.server``, played as a LoRA adapter on that server: `SnapshotStore`),
  plus the matches between members that a sampler asks for (PSRO's payoff matrix); with
  several learners a member is every learner at that iteration, each in its roles' seats
  (`LearnerSnapshots`), and the sampler reads the matches as if one policy played them;
- Elo ratings of every seat holder, updated per match (a snapshot starts at the learner's
  rating), and the cross-play results between holders; both written as CSV tables;
- for games that list their information sets, the learner's exploitability each iteration
  (the last iterate), that of the average of all iterates, and that of the sampler's mixture
  over the pool (the policy fictitious play and PSRO converge in);
- with ``pool.keep_best``, a guard against collapse: each new snapshot plays every other
  snapshot in the pool, and when its cross-play score falls more than ``keep_best_margin``
  below the best member's, the learner goes back to that member's weights (`keep_best`).

Everything here is part of the checkpoint, so a resumed run continues exactly.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from selfplay.api.errors import ConfigError, blame
from selfplay.api.ratings import Ratings, score_of
from selfplay.api.sampler import LEARNER, Pool, snapshot
from selfplay.api.types import Episode
from selfplay.core.models.policy_table import Table, is_tabular, joint_table, policy_table
from selfplay.core.rollout import play

if TYPE_CHECKING:
    from selfplay.api.run_view import RunView
    from selfplay.core.league.seating import Seats
    from selfplay.core.league.snapshots import SnapshotStore


class League:
    """Built from the run's view, its seat resolver and its snapshot store (pool/)."""

    def __init__(self, view: RunView, seats: Seats, store: SnapshotStore) -> None:
        self.config, self.game, self.sampler = view.config, view.game, view.sampler
        self.learner, self.seats, self.store = view.learner, seats, store
        self.folder, self.barrier = view.folder, view.barrier
        self.reset_optimizer, self.say = view.reset_optimizer, view.say
        store.serve_on(self.config.pool.server)  # snapshots as adapters on a server, if named
        self.pool = Pool(size=self.config.pool.size, scripted=list(self.config.pool.scripted))
        self.elo = Ratings()
        self.results: dict[tuple[str, str], list[float]] = {}  # (a, b) -> [a's payoff sum, n]
        self.tables: dict[str, Table] = {}  # snapshot name -> its policy table
        self.iterates: list[Table] = []
        self.retired: list[str] = []  # evicted since the last checkpoint; deleted after the next
        self.tabular = is_tabular(self.game)
        self.keep_best = self.config.pool.keep_best
        # keep-best needs snapshots even when the sampler never plays them
        self.keeps_pool = self.sampler.uses_pool or self.keep_best
        self.scores: dict[tuple[str, str], list[float]] = {}  # (a, b) -> [a's score sum, n]
        self.rollbacks: list[tuple[int, str]] = []  # (iteration, the snapshot restored)

    @property
    def members(self) -> list[str]:
        return self.pool.members if self.sampler.uses_pool else []

    # ---- the trainer's calls ----------------------------------------------------------------

    def start(self) -> None:
        """Before the first iteration of a fresh run: the starting policy joins the pool."""
        if self.keeps_pool and not self.pool.snapshots:
            self._add_snapshot(0, random.Random(self.config.seed))

    def after_iteration(self, iteration: int, episodes: Sequence[Episode]) -> dict[str, float]:
        """Learn from the iteration's matches; snapshot and evaluate members when it is time."""
        name = getattr(self.sampler, "name", type(self.sampler).__name__)
        with blame(f"Opponent sampler {name!r}, learning from {len(episodes)} matches,"):
            self.sampler.update(self.seats.as_sampled(episodes))
        self._record(episodes)
        every, kept = self.config.pool.snapshot_every, {}
        if self.keeps_pool and every and iteration % every == 0:
            rng = random.Random(self.config.seed * 7_919 + iteration)
            self._add_snapshot(iteration, rng)
            if self.keep_best:
                kept = self._keep_best(iteration, rng)
        return self._metrics() | kept

    def _metrics(self) -> dict[str, float]:
        row = {f"elo/{name}": rating for name, rating in self.elo.elo.items()}
        if self.keeps_pool:
            row["pool/size"] = float(len(self.pool.members))
        row.update(self.sampler.metrics())
        if self.tabular:
            row.update(self._exploitability())
        return row

    # ---- pool -------------------------------------------------------------------------------

    def _add_snapshot(self, iteration: int, rng: random.Random) -> None:
        name = snapshot(iteration)
        self.store.save(name)
        self.barrier()  # process 0 wrote the file; now every process may load it
        for seat in sorted(set(self.seats.owners.values())) or [LEARNER]:
            # a snapshot starts at its learner's rating (each learner's own, when several)
            self.elo.add(self.seats.holder(name, self._role_of(seat)), self.elo.rating(seat))
        if self.tabular:
            self.tables[name] = self._learner_table()
        for gone in self.pool.add(name):
            self.retired.append(gone)
            self.tables.pop(gone, None)
        pairs = self.sampler.wanted_matches(self.pool.members)
        if pairs:
            episodes = self._play_pairs(pairs, rng)
            self.sampler.update(self.seats.as_sampled(episodes))
            self._record(episodes)

    def _role_of(self, seat: str) -> str:
        """A role the learner seat ``seat`` plays (any role for the shared policy)."""
        return next((r for r, s in self.seats.owners.items() if s == seat), self.game.roles[0])

    def _play_pairs(self, pairs: Sequence[tuple[str, str]], rng: random.Random) -> list[Episode]:
        """``matches_per_pair`` matches per pair, seats alternating; every process plays all."""
        roles = self.game.roles
        seatings, seeds = [], []
        for a, b in pairs:
            for i in range(self.config.pool.matches_per_pair):
                first, second = (a, b) if i % 2 == 0 else (b, a)
                holders = {roles[0]: first, roles[1]: second}
                seatings.append(
                    {r: self.seats.policy(self.seats.holder(h, r)) for r, h in holders.items()}
                )
                seeds.append(rng.randrange(2**31))
        episodes: list[Episode] = []
        # two loaded snapshots at a time: play pair by pair
        n = self.config.pool.matches_per_pair
        for start in range(0, len(seatings), n):
            episodes.extend(play(self.game, seatings[start : start + n], seeds[start : start + n]))
        return episodes

    # ---- keep the best -----------------------------------------------------------------------

    def _keep_best(self, iteration: int, rng: random.Random) -> dict[str, float]:
        """The new snapshot plays every other snapshot it has not met; when it scores more than
        the margin below the pool's best member, the learner goes back to that member."""
        newest, snapshots = snapshot(iteration), list(self.pool.snapshots)
        unmet = [(newest, o) for o in snapshots if o != newest and (newest, o) not in self.scores]
        if unmet:
            self._record(self._play_pairs(unmet, rng))
        scores = {name: self._pool_score(name, snapshots) for name in snapshots}
        row = {"pool/newest_score": scores[newest]}
        best = best_member(scores, self.config.pool.keep_best_margin, newest)
        if best is not None:
            self.store.restore(best)
            self.reset_optimizer()
            self.rollbacks.append((iteration, best))
            row["pool/rolled_back_to"] = float(snapshot_iteration(best))
            self.say(
                f"keep-best: snapshot {iteration} scored {scores[newest]:.2f} against the pool, "
                f"below snapshot {snapshot_iteration(best)}'s {scores[best]:.2f}; the learner "
                f"goes back to snapshot {snapshot_iteration(best)}."
            )
        top = leader(scores)
        row["pool/best_score"], row["pool/best"] = scores[top], float(snapshot_iteration(top))
        row["pool/rollbacks"] = float(len(self.rollbacks))
        return row

    def _pool_score(self, name: str, snapshots: Sequence[str]) -> float:
        """``name``'s mean score (1 a win, 0.5 a draw, 0 a loss) over the other snapshots it
        met, each opponent counting alike; 0.5 with none."""
        met = [self.scores[name, other] for other in snapshots if (name, other) in self.scores]
        means = [total / n for total, n in met if n]
        return sum(means) / len(means) if means else 0.5

    # ---- ratings and results ---------------------------------------------------------------

    def _record(self, episodes: Sequence[Episode]) -> None:
        for episode in episodes:
            if len(episode.seats) != 2 or episode.outcome is None:
                continue
            (role_a, a), (role_b, b) = sorted(episode.seats.items())
            if a == b:
                continue
            pa, pb = episode.outcome[role_a], episode.outcome[role_b]
            self.elo.record(a, b, score_of(pa - pb))
            _tally(self.results, a, b, pa, pb)
            if self.keep_best:
                _tally(self.scores, a, b, score_of(pa - pb), score_of(pb - pa))

    def write_reports(self) -> None:
        """ratings.csv and crossplay.csv in the run folder (process 0)."""
        if self.folder is None:
            return
        self.elo.write_csv(self.folder / "ratings.csv")
        with open(self.folder / "crossplay.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["holder", "opponent", "mean_payoff", "matches"])
            for (a, b), (total, n) in sorted(self.results.items()):
                writer.writerow([a, b, f"{total / n:.4f}", int(n)])

    # ---- exploitability ---------------------------------------------------------------------

    def _learner_table(self) -> Table:
        """The shared policy's table, or the joint one of several learners (each its roles)."""
        temperature = self.config.generation.temperature
        if not self.seats.owners:
            return policy_table(self.learner, self.game, temperature)
        players = {role: self.seats.policy(seat) for role, seat in self.seats.owners.items()}
        return joint_table(self.game, players, temperature)

    def _exploitability(self) -> dict[str, float]:
        game = self.game
        last = self._learner_table()
        self.iterates.append(last)
        row = {
            "exploitability/last": game.exploitability(last),
            "exploitability/iterates_average": game.exploitability(
                game.average_policy(self.iterates, [1.0] * len(self.iterates))
            ),
        }
        mixture = self.sampler.mixture(self.pool.members) if self.sampler.uses_pool else None
        if mixture:
            named = [(self.tables[m], w) for m, w in mixture.items() if m in self.tables and w > 0]
            if named:
                tables, weights = zip(*named, strict=True)
                row["exploitability/pool_average"] = game.exploitability(
                    game.average_policy(list(tables), list(weights))
                )
        return row

    # ---- checkpoint -------------------------------------------------------------------------

    def after_checkpoint(self) -> None:
        """Snapshots evicted before this checkpoint can no longer be needed by a resume."""
        for name in self.retired:
            self.store.delete(name)
        self.retired = []

    def state_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool.state_dict(),
            "elo": self.elo.state_dict(),
            "results": [[a, b, t, n] for (a, b), (t, n) in self.results.items()],
            "tables": self.tables,
            "iterates": self.iterates,
            "retired": list(self.retired),
            "scores": [[a, b, t, n] for (a, b), (t, n) in self.scores.items()],
            "rollbacks": [list(rollback) for rollback in self.rollbacks],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pool.load_state_dict(state["pool"])
        self.elo.load_state_dict(state["elo"])
        self.results = {(a, b): [t, n] for a, b, t, n in state["results"]}
        self.tables = state["tables"]
        self.iterates = state["iterates"]
        self.retired = list(state["retired"])
        self.scores = {(a, b): [t, n] for a, b, t, n in state.get("scores", [])}
        self.rollbacks = [(int(i), str(name)) for i, name in state.get("rollbacks", [])]


def _tally(table: dict[tuple[str, str], list[float]], a: str, b: str, x: float, y: float) -> None:
    """Add ``a``'s result ``x`` against ``b``, and ``b``'s ``y`` against ``a``, to ``table``."""
    for key, value in (((a, b), x), ((b, a), y)):
        total = table.setdefault(key, [0.0, 0.0])
        total[0] += value
        total[1] += 1


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
