"""The ``reference-pool`` suite: the policy's rating among a frozen pool of scripted agents.

Each game has a fixed pool of reference agents, the game's own scripted players:

- tic-tac-toe: ``random`` and ``minimax`` (perfect play);
- Kuhn poker: ``random`` and ``nash`` (an equilibrium strategy);
- OpenSpiel's connect_four: ``random`` and ``mcts`` (OpenSpiel's tree search, 100 simulations
  a move), where the OpenSpiel extra is installed; without it the game has no figures and
  the report's ``notes`` say why.

A round robin per game and seed: the policy against every agent and every agent against every
other (so the ratings are anchored by matches the policy plays no part in), ``matches`` per
pair (10 by default), each side in each seat in turn; greedy and seeded, so a seed replays
the tournament. A match is a win for the side whose payoff is higher, a draw when they are
equal (in Kuhn poker a hand won by chips, so ``nash``, which wins on average by the size of
its pots rather than by how often, rates close to ``random``).

Bradley-Terry ratings are fitted to each game's results by the project's own fit
(`selfplay.api.ratings.Ratings.bradley_terry`: Hunter's MM algorithm, a draw half a win, one
virtual drawn game against a reference player so that a side that never scores keeps a finite
rating) and shifted so that the ``random`` agent sits at 1000 on the Elo scale (a 400-point
gap is 10:1 odds). Figures per game (an OpenSpiel game named without ``openspiel:``) and seed:
``rating`` (the policy's), ``rank`` (1 = above every agent of the pool, pool size + 1 = below
all), ``score_vs/AGENT`` (the policy's share of points against it) and ``rating/AGENT`` (each
agent's own rating, the pool's frame of reference).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from selfplay.api.policy import ScriptedPolicy
from selfplay.api.ratings import Ratings
from selfplay.api.tasks import Bench, Figures, Suite
from selfplay.api.types import Episode, Role
from selfplay.plugins.hookspecs import hookimpl
from selfplay.plugins.registry import PluginError

POOLS = {
    "tictactoe": ("random", "minimax"),
    "kuhn-poker": ("random", "nash"),
    "openspiel:connect_four": ("random", "mcts"),
}
POLICY = "policy"  # the measured policy's name in the tournament
ANCHORED, ANCHOR = "random", 1000.0
# one match: (a side, its opponent, the side's score: 1 won, 1/2 drawn, 0 lost)
Result = tuple[str, str, float]


def scores(played: Sequence[tuple[Role, Episode]]) -> list[float]:
    """Each match's score for the side whose role is given, by payoff."""
    found = []
    for role, episode in played:
        mine = episode.outcome[role]
        other = max(v for r, v in episode.outcome.items() if r != role)
        found.append(1.0 if mine > other else 0.5 if mine == other else 0.0)
    return found


def round_robin(
    bench: Bench, game: object, pool: Sequence[str], matches: int, seed: int
) -> list[Result]:
    """Every match of the policy against each agent, and of the agents among themselves."""
    results = []
    for agent in pool:
        results += [(POLICY, agent, s) for s in scores(bench.matches(game, agent, matches, seed))]
    for first, second in itertools.combinations(pool, 2):
        found = bench.matches(game, second, matches, seed, player=ScriptedPolicy(first))
        results += [(first, second, s) for s in scores(found)]
    return results


def anchored_ratings(
    results: Iterable[Result], anchored: str = ANCHORED, anchor: float = ANCHOR
) -> dict[str, float]:
    """Bradley-Terry ratings on the Elo scale, ``anchored`` at ``anchor``."""
    ratings = Ratings()
    for name, opponent, score in results:
        ratings.record(name, opponent, score)
    fitted = ratings.bradley_terry()
    shift = anchor - fitted[anchored]
    return {name: rating + shift for name, rating in fitted.items()}


class ReferencePool(Suite):
    name = "reference-pool"
    description = (
        "A round robin against a frozen pool of scripted agents (random, minimax, nash, mcts), "
        "both seats: the policy's Bradley-Terry rating (random = 1000) and rank per game."
    )
    games = tuple(POOLS)
    matches = 10

    def run(self, bench: Bench, seeds: Sequence[int], matches: int) -> Figures:
        figures: Figures = {}
        for name, pool in POOLS.items():
            try:
                game = bench.game(name)
            except PluginError as error:  # the OpenSpiel extra is not installed
                bench.note(f"{name} left out, no figures for it: {error}")
                continue
            for seed in seeds:
                results = round_robin(bench, game, pool, matches, seed)
                ratings = anchored_ratings(results)
                mine, short = ratings[POLICY], name.removeprefix("openspiel:")
                add = figures.setdefault
                add(f"{short}/rating", []).append(mine)
                add(f"{short}/rank", []).append(1.0 + sum(ratings[a] > mine for a in pool))
                for agent in pool:
                    mine_vs = [s for a, b, s in results if a == POLICY and b == agent]
                    add(f"{short}/score_vs/{agent}", []).append(sum(mine_vs) / len(mine_vs))
                    add(f"{short}/rating/{agent}", []).append(ratings[agent])
        return figures


@hookimpl
def register_suites(register):
    register(ReferencePool())
