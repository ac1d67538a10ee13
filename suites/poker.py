"""The ``poker`` suite: exact exploitability in the two poker games whose trees are listed.

Kuhn poker (12 information sets) and OpenSpiel's Leduc poker (936): for each, the exact
exploitability of the policy's table (its probability of each legal action at each
information set, read as `Bench.table` reads it; a policy that cannot be read as a table has
none, and the note says so) and its mean payoff against a scripted player in both seats
(`nash` in Kuhn poker; in Leduc poker `rank`, which bets by the strength of its hand alone).

Exploitability is the mean over the seats of what a best response gains against the policy:
0 at an equilibrium; uniform play scores 0.458 in Kuhn poker and 2.374 in Leduc poker. It
does not depend on the seed. The suite measures what a policy trained on one poker game
keeps in the other (Kuhn poker is Leduc poker's first round with one suit and no public
card); Leduc poker needs the OpenSpiel extra and is left out without it, with a note.
"""

from __future__ import annotations

from collections.abc import Sequence

from selfplay.api.tasks import Bench, Figures, Suite
from selfplay.plugins.hookspecs import hookimpl
from selfplay.plugins.registry import PluginError
from selfplay.suites.solver import outcome_rates

# game -> (its short name in the figures, the scripted player the policy meets)
GAMES = {"kuhn-poker": ("kuhn-poker", "nash"), "openspiel:leduc_poker": ("leduc-poker", "rank")}


class PokerSuite(Suite):
    name = "poker"
    description = (
        "Kuhn poker and Leduc poker (OpenSpiel's): exact exploitability of the policy's "
        "table, payoff vs nash (Kuhn) and vs rank (Leduc), both seats."
    )
    games = tuple(GAMES)
    matches = 20

    def run(self, bench: Bench, seeds: Sequence[int], matches: int) -> Figures:
        figures: Figures = {}
        add = figures.setdefault
        for name, (short, opponent) in GAMES.items():
            try:
                game = bench.game(name)
            except PluginError as error:  # Leduc poker without the OpenSpiel extra
                bench.note(f"{name} left out, no figures for it: {error}")
                continue
            table = bench.table(game)
            if table is None:
                bench.note(f"{name}: the policy cannot be read as a table, so no exploitability")
            exploitability = None if table is None else float(game.exploitability(table))
            for seed in seeds:
                rates = outcome_rates(bench.matches(game, opponent, matches, seed))
                add(f"{short}/payoff_vs_{opponent}", []).append(rates["mean_payoff"])
                for role in game.roles:
                    add(f"{short}/payoff_vs_{opponent}/{role}", []).append(
                        rates[f"mean_payoff/{role}"]
                    )
                if exploitability is not None:  # exact: one value, the same for every seed
                    add(f"{short}/exploitability", []).append(exploitability)
        return figures


@hookimpl
def register_suites(register):
    register(PokerSuite())
