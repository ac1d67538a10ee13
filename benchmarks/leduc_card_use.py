"""Does a trained Leduc poker policy play its card? Read from a run's newest checkpoint.

    python benchmarks/leduc_card_use.py RUN [RUN ...]
    python benchmarks/leduc_card_use.py --view spiel RUN   # a run made before the readable view

For each run (a run folder of ``--game openspiel:leduc_poker``) the policy's table is scored
as exact exploitability scores it, and three figures printed:

- the exploitability of that table (the run's ``exploitability/last`` at its newest checkpoint);
- the exploitability of the same table with the card taken out: at each betting history, every
  card's row replaced by the mean of the rows (a policy that plays the same whatever it holds);
- how far apart the rows of different ranks are at one betting history: the total-variation
  distance between the action probabilities of two ranks, averaged over the histories and pairs
  of ranks (0: the card changes nothing; 1: it decides every action), and its largest value.

A policy whose two exploitabilities agree and whose distance is about 0 ignores its card; such
a policy cannot take Leduc's exploitability much under 2.1 (`leduc_tabular.py --blind`).
"""

from __future__ import annotations

import argparse
import itertools
import re
import statistics
from pathlib import Path

PRIVATE = re.compile(r"\[Private: (\d+)\]")


def histories(table: dict[str, dict[str, float]]) -> dict[str, dict[str, dict[str, float]]]:
    """{betting history (the key without the card): {card number: row}}."""
    grouped: dict[str, dict[str, dict[str, float]]] = {}
    for key, row in table.items():
        grouped.setdefault(PRIVATE.sub("", key), {})[PRIVATE.search(key)[1]] = row
    return grouped


def card_distance(table: dict[str, dict[str, float]]) -> tuple[float, float]:
    distances = []
    for by_card in histories(table).values():
        by_rank = {int(card) // 2: row for card, row in by_card.items()}  # suits play alike
        for a, b in itertools.combinations(sorted(by_rank), 2):
            ra, rb = by_rank[a], by_rank[b]
            distances.append(0.5 * sum(abs(ra[k] - rb[k]) for k in ra))
    return statistics.mean(distances), max(distances)


def without_card(table: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    grouped = histories(table)
    out = {}
    for key, row in table.items():
        rows = list(grouped[PRIVATE.sub("", key)].values())
        out[key] = {k: sum(r[k] for r in rows) / len(rows) for k in row}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument(
        "--view",
        choices=["readable", "spiel"],
        help="the prompt's view of the state (game_options.view) when the run's config does "
        "not say: spiel for runs made before the readable view was the default",
    )
    args = parser.parse_args()
    import torch

    from selfplay.core.commands.play import load_checkpoint_policy
    from selfplay.core.models.policy_table import policy_table
    from selfplay.core.run.build import build_game

    torch.set_num_threads(1)
    for run in args.runs:
        loaded = load_checkpoint_policy(run, None)
        config = loaded.config
        if args.view and "view" not in config.game_options:
            options = {**config.game_options, "view": args.view}
            config = config.model_copy(update={"game_options": options})
        game = build_game(config)
        table = policy_table(loaded.policy, game, loaded.config.generation.temperature)
        mean, largest = card_distance(table)
        print(
            f"{run}: exploitability {game.exploitability(table):.3f}, "
            f"with the card taken out {game.exploitability(without_card(table)):.3f}; "
            f"distance between ranks {mean:.3f} on average, {largest:.3f} at most",
            flush=True,
        )


if __name__ == "__main__":
    main()
