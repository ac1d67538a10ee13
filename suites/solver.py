"""The ``solver`` suite: how close a policy plays to the solved game.

Tic-tac-toe against the ``minimax`` player, in both seats: the non-loss and draw rates, and
the share of the policy's decisions that keep the position's game-theoretic value. A move
keeps it when the minimax value of the position after the move, from the mover's side,
equals the value before it; values are exact (the game's own minimax, cached by board). A
decision the policy loses by forfeit (invalid answers) keeps nothing.

Kuhn poker: the exact exploitability of the policy's table (its probability of each legal
action at each of the 12 information sets; only a policy that can be read as a table has
one), and its mean payoff against the ``nash`` player in both seats.

Every figure is one value per seed; matches are greedy and seeded as in `selfplay eval`.
Exploitability does not depend on the seed (the table is exact), so its spread is zero.
"""

from __future__ import annotations

from collections.abc import Sequence

from selfplay.api.tasks import Bench, Figures, Suite
from selfplay.api.types import Episode, Role
from selfplay.games.tictactoe import MARKS, minimax_value
from selfplay.plugins.hookspecs import hookimpl

TICTACTOE, KUHN = "tictactoe", "kuhn-poker"


def value_kept(role: Role, episode: Episode) -> tuple[int, int]:
    """(decisions that kept the value, decisions) of ``role`` in a tic-tac-toe match."""
    board, kept, decisions = "." * 9, 0, 0
    for turn in episode.turns:
        if not turn.valid or turn.action is None:
            continue
        mark = MARKS[turn.role]
        other = "o" if mark == "x" else "x"
        cell = int(turn.action.strip("[]"))
        after = board[:cell] + mark + board[cell + 1 :]
        if turn.role == role:
            decisions += 1
            kept += -minimax_value(after, other) == minimax_value(board, mark)
        board = after
    if episode.state.get("forfeit") == role:
        decisions += 1
    return kept, decisions


def outcome_rates(played: Sequence[tuple[Role, Episode]]) -> dict[str, float]:
    """Non-loss, draw and mean payoff of the policy over its matches, overall and per seat."""
    rates: dict[str, float] = {}
    non_loss = draws = payoff = 0.0
    seats: dict[Role, list[float]] = {}
    for role, episode in played:
        mine = episode.outcome[role]
        best_other = max(v for r, v in episode.outcome.items() if r != role)
        non_loss += mine >= best_other
        draws += mine == best_other
        payoff += mine
        seats.setdefault(role, []).append(mine)
    n = len(played)
    rates["non_loss_rate"], rates["draw_rate"] = non_loss / n, draws / n
    rates["mean_payoff"] = payoff / n
    for role, payoffs in sorted(seats.items()):
        rates[f"mean_payoff/{role}"] = sum(payoffs) / len(payoffs)
    return rates


class SolverSuite(Suite):
    name = "solver"
    description = (
        "Against solved games: tic-tac-toe vs minimax (non-loss, draws, value-keeping moves) "
        "and Kuhn poker (exact exploitability, payoff vs nash), both seats."
    )
    games = (TICTACTOE, KUHN)

    def run(self, bench: Bench, seeds: Sequence[int], matches: int) -> Figures:
        figures: Figures = {}

        def add(name: str, value: float) -> None:
            figures.setdefault(name, []).append(float(value))

        tictactoe, kuhn = bench.game(TICTACTOE), bench.game(KUHN)
        table = bench.table(kuhn)
        exploitability = None if table is None else kuhn.exploitability(table)
        for seed in seeds:
            played = bench.matches(tictactoe, "minimax", matches, seed)
            rates = outcome_rates(played)
            add("tictactoe/non_loss_rate", rates["non_loss_rate"])
            add("tictactoe/draw_rate", rates["draw_rate"])
            for role in tictactoe.roles:
                seat = [(r, ep) for r, ep in played if r == role]
                add(f"tictactoe/non_loss_rate/{role}", outcome_rates(seat)["non_loss_rate"])
            counts = [value_kept(role, episode) for role, episode in played]
            decisions = sum(d for _, d in counts)
            add("tictactoe/value_kept", sum(k for k, _ in counts) / decisions if decisions else 0)
            rates = outcome_rates(bench.matches(kuhn, "nash", matches, seed))
            add("kuhn-poker/payoff_vs_nash", rates["mean_payoff"])
            for role in kuhn.roles:
                add(f"kuhn-poker/payoff_vs_nash/{role}", rates[f"mean_payoff/{role}"])
            if exploitability is not None:
                add("kuhn-poker/exploitability", exploitability)
        return figures


@hookimpl
def register_suites(register):
    register(SolverSuite())
