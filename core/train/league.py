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
  over the pool (the policy fictitious play and PSRO converge in).

Everything here is part of the checkpoint, so a resumed run continues exactly.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from selfplay.api.errors import blame
from selfplay.api.ratings import Ratings, score_of
from selfplay.api.sampler import LEARNER, Pool, snapshot
from selfplay.api.types import Episode
from selfplay.core.models.policy_table import Table, is_tabular, joint_table, policy_table
from selfplay.core.rollout import play

if TYPE_CHECKING:
    from selfplay.api.run_view import RunView
    from selfplay.core.train.seating import Seats
    from selfplay.core.train.snapshots import SnapshotStore


class League:
    """Built from the run's view, its seat resolver and its snapshot store (pool/)."""

    def __init__(self, view: RunView, seats: Seats, store: SnapshotStore) -> None:
        self.config, self.game, self.sampler = view.config, view.game, view.sampler
        self.learner, self.seats, self.store = view.learner, seats, store
        self.folder, self.barrier = view.folder, view.barrier
        store.serve_on(self.config.pool.server)  # snapshots as adapters on a server, if named
        self.pool = Pool(size=self.config.pool.size, scripted=list(self.config.pool.scripted))
        self.elo = Ratings()
        self.results: dict[tuple[str, str], list[float]] = {}  # (a, b) -> [a's payoff sum, n]
        self.tables: dict[str, Table] = {}  # snapshot name -> its policy table
        self.iterates: list[Table] = []
        self.retired: list[str] = []  # evicted since the last checkpoint; deleted after the next
        self.tabular = is_tabular(self.game)

    @property
    def members(self) -> list[str]:
        return self.pool.members if self.sampler.uses_pool else []

    # ---- the trainer's calls ----------------------------------------------------------------

    def start(self) -> None:
        """Before the first iteration of a fresh run: the starting policy joins the pool."""
        if self.sampler.uses_pool and not self.pool.snapshots:
            self._add_snapshot(0, random.Random(self.config.seed))

    def after_iteration(self, iteration: int, episodes: Sequence[Episode]) -> dict[str, float]:
        """Learn from the iteration's matches; snapshot and evaluate members when it is time."""
        name = getattr(self.sampler, "name", type(self.sampler).__name__)
        with blame(f"Opponent sampler {name!r}, learning from {len(episodes)} matches,"):
            self.sampler.update(self.seats.as_sampled(episodes))
        self._record(episodes)
        every = self.config.pool.snapshot_every
        if self.sampler.uses_pool and every and iteration % every == 0:
            self._add_snapshot(iteration, random.Random(self.config.seed * 7_919 + iteration))
        return self._metrics()

    def _metrics(self) -> dict[str, float]:
        row = {f"elo/{name}": rating for name, rating in self.elo.elo.items()}
        if self.sampler.uses_pool:
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
            for x, y, p in ((a, b, pa), (b, a, pb)):
                total = self.results.setdefault((x, y), [0.0, 0.0])
                total[0] += p
                total[1] += 1

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
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pool.load_state_dict(state["pool"])
        self.elo.load_state_dict(state["elo"])
        self.results = {(a, b): [t, n] for a, b, t, n in state["results"]}
        self.tables = state["tables"]
        self.iterates = state["iterates"]
        self.retired = list(state["retired"])
