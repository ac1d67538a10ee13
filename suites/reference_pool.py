"""The ``reference-pool`` suite: the policy's rating among a frozen pool of scripted agents.

Each game has a fixed pool of reference agents, the game's own scripted players:

- tic-tac-toe: ``random`` and ``minimax`` (perfect play);
- Kuhn poker: ``random`` and ``nash`` (an equilibrium strategy);
- OpenSpiel's connect_four: ``random`` and ``mcts`` (OpenSpiel's tree search, 100 simulations
  a move) — only where the OpenSpiel extra is installed; without it the game is left out and
  said so in the report's figures (no rating for it).

A round robin per game and seed: the policy against every agent and every agent against every
other (so the ratings are anchored by matches the policy plays no part in), ``matches`` per
pair, each side in each seat in turn; greedy and seeded, so a seed replays the tournament. A
match is a win for the side whose payoff is higher, a draw when they are equal.

Bradley-Terry ratings are fitted to each game's results (suites/ratings.py; a draw is half a
win) and put on an Elo-like scale with the ``random`` agent at 1000. Figures per game (an
OpenSpiel game named without ``openspiel:``) and seed: ``rating`` (the policy's), ``rank``
(1 = above every agent of the pool, pool size + 1 = below all), ``score_vs/AGENT`` (the
policy's share of points against it) and ``rating/AGENT`` (each agent's own rating, the
pool's frame of reference).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from selfplay.api.policy import ScriptedPolicy
from selfplay.api.tasks import Bench, Figures, Suite
from selfplay.api.types import Episode, Role
from selfplay.plugins.hookspecs import hookimpl
from selfplay.plugins.registry import PluginError
from selfplay.suites.ratings import Pair, bradley_terry, elo_scale

POOLS = {
    "tictactoe": ("random", "minimax"),
    "kuhn-poker": ("random", "nash"),
    "openspiel:connect_four": ("random", "mcts"),
}
POLICY = "policy"  # the measured policy's name in the tournament
ANCHORED, ANCHOR = "random", 1000.0


def points(played: Sequence[tuple[Role, Episode]]) -> float:
    """The first side's points: 1 a win, 1/2 a draw, by payoff."""
    total = 0.0
    for role, episode in played:
        mine = episode.outcome[role]
        other = max(v for r, v in episode.outcome.items() if r != role)
        total += 1.0 if mine > other else 0.5 if mine == other else 0.0
    return total


def round_robin(
    bench: Bench, game: object, pool: Sequence[str], matches: int, seed: int
) -> tuple[dict[Pair, float], dict[Pair, float]]:
    """(points, matches) of every pair: the policy against each agent, and the agents among
    themselves."""
    score: dict[Pair, float] = {}
    played: dict[Pair, float] = {}
    for agent in pool:
        score[(POLICY, agent)] = points(bench.matches(game, agent, matches, seed))
        played[(POLICY, agent)] = matches
    for first, second in itertools.combinations(pool, 2):
        found = bench.matches(game, second, matches, seed, player=ScriptedPolicy(first))
        score[(first, second)] = points(found)
        played[(first, second)] = matches
    return score, played


class ReferencePool(Suite):
    name = "reference-pool"
    description = (
        "A round robin against a frozen pool of scripted agents (random, minimax, nash, mcts), "
        "both seats: the policy's Bradley-Terry rating (random = 1000) and rank per game."
    )
    games = tuple(POOLS)
    matches = 4

    def run(self, bench: Bench, seeds: Sequence[int], matches: int) -> Figures:
        figures: Figures = {}
        for name, pool in POOLS.items():
            try:
                game = bench.game(name)
            except PluginError:  # the OpenSpiel extra is not installed: no rating for it
                continue
            for seed in seeds:
                score, played = round_robin(bench, game, pool, matches, seed)
                ratings = elo_scale(bradley_terry(score, played), ANCHORED, ANCHOR)
                mine, short = ratings[POLICY], name.removeprefix("openspiel:")
                add = figures.setdefault
                add(f"{short}/rating", []).append(mine)
                add(f"{short}/rank", []).append(1.0 + sum(ratings[a] > mine for a in pool))
                for agent in pool:
                    add(f"{short}/score_vs/{agent}", []).append(score[(POLICY, agent)] / matches)
                    add(f"{short}/rating/{agent}", []).append(ratings[agent])
        return figures


@hookimpl
def register_suites(register):
    register(ReferencePool())
