"""The league: one owner for the pool of past selves, the payoff table, the ratings,
exploitability and keep-best.

The run hands the league every finished match; each iteration it goes through three phases,
as PSRO does (open_spiel's psro_v2, Lanctot et al. 2017):

1. respond: the iteration's matches go into the one payoff table (api/ratings/payoffs.py)
   and the Elo ratings of every seat holder (a snapshot starts at its learner's rating), and
   the sampler learns from them;
2. expand: every ``pool.snapshot_every`` iterations (for samplers with ``uses_pool``, or
   keep-best) the learner's snapshot joins the pool, written to ``<run folder>/pool/`` and
   loaded on demand (or, with ``pool.server``, played as a LoRA adapter on that server:
   `SnapshotStore`); with several learners a member is every learner at that iteration, each
   in its roles' seats (`LearnerSnapshots`);
3. evaluate: the matches the sampler asks for between members (PSRO's payoff matrix, read
   from the same table), keep-best's comparison of the new snapshot with the pool
   (core/league/keep_best.py), and, for games that list their information sets, exact
   exploitability (core/league/exploitability.py).

Its checkpoint is its ``state_dict``; its tables (ratings.csv, crossplay.csv) are written by a
duty of the run (core/run/duties/).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfplay.api.errors import blame
from selfplay.api.ratings import Payoffs, Ratings, score_of
from selfplay.api.sampler import LEARNER, Pool, snapshot
from selfplay.api.types import Episode
from selfplay.core.league.exploitability import Exploitability
from selfplay.core.league.keep_best import KeepBest
from selfplay.core.models.policy_table import Table, joint_table, policy_table
from selfplay.core.rollout import play

if TYPE_CHECKING:
    from selfplay.api.run_view import RunView
    from selfplay.core.league.seating import Seats
    from selfplay.core.league.snapshots import SnapshotStore


class League:
    """Built from the run's view, its seat resolver and its snapshot store (pool/)."""

    def __init__(self, view: RunView, seats: Seats, store: SnapshotStore) -> None:
        self.config, self.game, self.sampler = view.config, view.game, view.sampler
        self.view, self.seats, self.store = view, seats, store
        pool = self.config.pool
        store.serve_on(pool.server)  # snapshots as adapters on a server, if named
        self.pool = Pool(size=pool.size, scripted=list(pool.scripted))
        self.payoffs = Payoffs()
        self.elo = Ratings()
        self.exploitability = Exploitability(self.game, self._learner_table)
        self.keep_best = KeepBest(pool.keep_best_margin, self.payoffs, self._restore)
        self.retired: list[str] = []  # evicted since the last checkpoint; deleted after the next
        # keep-best needs snapshots even when the sampler never plays them
        self.keeps_pool = self.sampler.uses_pool or pool.keep_best
        self.sampler.payoff_table = self.payoffs

    @property
    def members(self) -> list[str]:
        return self.pool.members if self.sampler.uses_pool else []

    # ---- the run's calls ----------------------------------------------------------------------

    def start(self) -> None:
        """Before the first iteration of a fresh run: the starting policy joins the pool."""
        if self.keeps_pool and not self.pool.snapshots:
            self._expand(0, random.Random(self.config.seed))

    def after_iteration(self, iteration: int, episodes: Sequence[Episode]) -> dict[str, float]:
        """The three phases (see the module doc); the iteration's league columns."""
        self._respond(episodes)
        every, kept = self.config.pool.snapshot_every, {}
        if self.keeps_pool and every and iteration % every == 0:
            rng = random.Random(self.config.seed * 7_919 + iteration)
            self._expand(iteration, rng)
            if self.config.pool.keep_best:
                kept = self._keep_best(iteration, rng)
        return self._metrics() | kept

    # ---- 1. respond: the matches go into the table and the ratings; the sampler learns --------

    def _respond(self, episodes: Sequence[Episode]) -> None:
        self._record(episodes)
        name = getattr(self.sampler, "name", type(self.sampler).__name__)
        with blame(f"Opponent sampler {name!r}, learning from {len(episodes)} matches,"):
            if self.seats.owners:  # several learners: the table as the sampler names holders
                self.sampler.payoff_table = self.payoffs.view(self.seats.sampler_name)
            self.sampler.update(self.seats.as_sampled(episodes))

    def _record(self, episodes: Sequence[Episode]) -> None:
        for episode in self.payoffs.record(episodes):
            (role_a, a), (role_b, b) = sorted(episode.seats.items())
            self.elo.record(a, b, score_of(episode.outcome[role_a] - episode.outcome[role_b]))

    # ---- 2. expand: the learner's snapshot joins the pool -----------------------------------

    def _expand(self, iteration: int, rng: random.Random) -> None:
        name = snapshot(iteration)
        self.store.save(name)
        self.view.barrier()  # process 0 wrote the file; now every process may load it
        for seat in sorted(set(self.seats.owners.values())) or [LEARNER]:
            # a snapshot starts at its learner's rating (each learner's own, when several)
            self.elo.add(self.seats.holder(name, self._role_of(seat)), self.elo.rating(seat))
        self.exploitability.joined(name)
        for gone in self.pool.add(name):
            self.retired.append(gone)
            self.exploitability.left(gone)
        if pairs := self.sampler.wanted_matches(self.pool.members):  # 3. evaluate: its matrix
            self._respond(self._play_pairs(pairs, rng))

    def _role_of(self, seat: str) -> str:
        """A role the learner seat ``seat`` plays (any role for the shared policy)."""
        return next((r for r, s in self.seats.owners.items() if s == seat), self.game.roles[0])

    # ---- 3. evaluate: members' matches, keep-best, exploitability ----------------------------

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

    def _keep_best(self, iteration: int, rng: random.Random) -> dict[str, float]:
        snapshots = list(self.pool.snapshots)
        if unmet := self.keep_best.unmet(iteration, snapshots):
            self._record(self._play_pairs(unmet, rng))
        return self.keep_best.judge(iteration, snapshots, self.view.say)

    def _restore(self, name: str) -> None:
        self.store.restore(name)
        self.view.reset_optimizer()

    def _learner_table(self) -> Table:
        """The shared policy's table, or the joint one of several learners (each its roles)."""
        temperature = self.config.generation.temperature
        if not self.seats.owners:
            return policy_table(self.view.learner, self.game, temperature)
        players = {role: self.seats.policy(seat) for role, seat in self.seats.owners.items()}
        return joint_table(self.game, players, temperature)

    def _metrics(self) -> dict[str, float]:
        row = {f"elo/{name}": rating for name, rating in self.elo.elo.items()}
        if self.keeps_pool:
            row["pool/size"] = float(len(self.pool.members))
        row.update(self.sampler.metrics())
        mixture = self.sampler.mixture(self.pool.members) if self.sampler.uses_pool else None
        row.update(self.exploitability.metrics(mixture))
        return row

    # ---- its tables and its checkpoint ------------------------------------------------------

    def write_tables(self, folder: Path) -> None:
        """ratings.csv and crossplay.csv in the run folder ``folder``."""
        self.elo.write_csv(folder / "ratings.csv")
        with open(folder / "crossplay.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["holder", "opponent", "mean_payoff", "matches"])
            for a, b, mean, n in self.payoffs.rows():
                writer.writerow([a, b, f"{mean:.4f}", n])

    def after_checkpoint(self) -> None:
        """Snapshots evicted before this checkpoint can no longer be needed by a resume."""
        for name in self.retired:
            self.store.delete(name)
        self.retired = []

    def state_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool.state_dict(),
            "elo": self.elo.state_dict(),
            "payoffs": self.payoffs.state_dict(),
            **self.exploitability.state_dict(),
            **self.keep_best.state_dict(),
            "retired": list(self.retired),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pool.load_state_dict(state["pool"])
        self.elo.load_state_dict(state["elo"])
        if "payoffs" in state:
            self.payoffs.load_state_dict(state["payoffs"])
        else:  # a checkpoint from before the one table: its results, and keep-best's scores
            self.payoffs.load_state_dict({"pairs": _older_tables(state)})
        self.exploitability.load_state_dict(state)
        self.keep_best.load_state_dict(state)
        self.retired = list(state["retired"])


def _older_tables(state: dict[str, Any]) -> list[list[Any]]:
    """The payoff table from the two an older checkpoint kept (``results``: payoff sums;
    ``scores``: score sums, kept only with keep-best; a draw each where it was not kept)."""
    scores = {(a, b): t for a, b, t, _ in state.get("scores", [])}
    return [[a, b, t, scores.get((a, b), 0.5 * n), n] for a, b, t, n in state["results"]]
