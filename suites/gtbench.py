"""The ``gtbench-lite`` suite: GTBench's OpenSpiel games against tree search, scored by NRA.

GTBench (Duan et al., "GTBench: Uncovering the Strategic Reasoning Limitations of LLMs via
Game-Theoretic Evaluations", 2024, arXiv:2402.12348) plays language models against
OpenSpiel's MCTS on a set of game-theoretic games and scores each game by the *normalized
relative advantage* of the model over its opponent. We use the paper's equation:

    NRA = (sum_n s_me(n) - sum_n s_opp(n)) / (sum_n |s_me(n)| + sum_n |s_opp(n)|)

over the matches ``n`` of a game, ``s`` being each side's payoff in the match (the game's
returns; a forfeit is scored by our invalid-move rules), and 0 when every payoff is 0 (as
GTBench's own ``nra_value`` does). The absolute values are taken match by match: applied to
the totals instead, a zero-sum game could only score -1, 0 or 1. NRA lies in [-1, 1]: 1 when
every point scored is the policy's, 0 for an even record, -1 when every point is the
opponent's. In a zero-sum game with payoffs +1/-1/0 it is (wins - losses) / decided matches.

"Lite": the games of GTBench that our OpenSpiel adapter plays (breakthrough and pig are left
out for their length), against ``mcts`` where the adapter has it (its simulations per move are
the game's ``mcts_simulations`` option, 100 by default) and ``random`` where it has not: tree
search cannot play liars_dice without reading hidden information, nor the one-move games
first_sealed_auction and matrix_pd (moves hidden until the round ends). The policy plays every
seat in turn. Per game: ``nra`` and ``win_rate`` (the share of matches where the policy's
payoff beat the opponent's); overall: ``nra`` and ``win_rate``, their means over the games.
"""

from __future__ import annotations

from collections.abc import Sequence

from selfplay.api.errors import ConfigError
from selfplay.api.tasks import Bench, Figures, Suite
from selfplay.api.types import Episode, Role
from selfplay.games.openspiel.spiel import pyspiel
from selfplay.plugins.hookspecs import hookimpl
from selfplay.plugins.registry import PluginError

# GTBench's games the adapter plays, each with its opponent
OPPONENTS = {
    "tic_tac_toe": "mcts",
    "connect_four": "mcts",
    "kuhn_poker": "mcts",
    "liars_dice": "random",
    "nim": "mcts",
    "bargaining": "mcts",
    "first_sealed_auction": "random",
    "matrix_pd": "random",
}
INSTALL = "pip install 'selfplay-rl[openspiel]'"


def nra(outcomes: Sequence[tuple[float, float]]) -> float:
    """GTBench's normalized relative advantage of (my payoff, opponent's payoff) pairs."""
    mine = sum(me for me, _ in outcomes)
    theirs = sum(other for _, other in outcomes)
    scale = sum(abs(me) + abs(other) for me, other in outcomes)
    return 0.0 if scale == 0 else (mine - theirs) / scale


def outcomes(played: Sequence[tuple[Role, Episode]]) -> list[tuple[float, float]]:
    """(the policy's payoff, the opponent's) of each match; several opponents: their best."""
    pairs = []
    for role, episode in played:
        others = [v for r, v in episode.outcome.items() if r != role]
        pairs.append((episode.outcome[role], max(others)))
    return pairs


def win_rate(pairs: Sequence[tuple[float, float]]) -> float:
    return sum(me > other for me, other in pairs) / len(pairs)


class GTBenchLite(Suite):
    name = "gtbench-lite"
    description = (
        "GTBench's OpenSpiel games (tic-tac-toe, connect four, Kuhn poker, liar's dice, nim, "
        "bargaining, sealed auction, prisoner's dilemma) vs MCTS or random, both seats: NRA."
    )
    games = tuple(f"openspiel:{name}" for name in OPPONENTS)
    matches = 4

    def run(self, bench: Bench, seeds: Sequence[int], matches: int) -> Figures:
        try:
            pyspiel()
        except PluginError:
            raise ConfigError(
                f"The gtbench-lite suite plays OpenSpiel games, which need the optional extra: "
                f"{INSTALL}."
            ) from None
        figures: Figures = {}
        built = {name: bench.game(name) for name in self.games}
        for seed in seeds:
            advantages, wins = [], []
            for name, game in built.items():
                short = name.removeprefix("openspiel:")
                pairs = outcomes(bench.matches(game, OPPONENTS[short], matches, seed))
                advantages.append(nra(pairs))
                wins.append(win_rate(pairs))
                figures.setdefault(f"{short}/nra", []).append(advantages[-1])
                figures.setdefault(f"{short}/win_rate", []).append(wins[-1])
            figures.setdefault("nra", []).append(sum(advantages) / len(advantages))
            figures.setdefault("win_rate", []).append(sum(wins) / len(wins))
        return figures


@hookimpl
def register_suites(register):
    register(GTBenchLite())
