"""The spread over seeds of each objective and off-policy correction, from recorded runs.

    python benchmarks/seed_variance.py              # the markdown table of RESULTS.md
    python benchmarks/seed_variance.py --json       # every row with its values

What decides between two methods is often not the final score but how far it moves from one
seed to the next (tinker-cookbook#600: the loss changed the seed-to-seed spread 50-fold).
This gathers, for the tic-tac-toe and Kuhn poker recipes, every multi-seed result recorded in
benchmarks/RESULTS.md (and docs/learning.md for the default run), one row per method and
figure, with the section each comes from, and prints each row's mean, sample standard
deviation, min-max and range, then each group's ratio of the largest spread to the smallest
(over the rows of three seeds or more).
No run is made: the values are the recorded ones, transcribed with their seeds. A row's
methods differ in more than the objective where the recorded runs did (their budgets are
named), so a ratio compares recipes as they were measured.

What is not here, and why: the objectives ``sft``, ``dpo``, ``grpo``, ``star`` and ``spin``
have recorded seeds only on math-solver ("Objectives: STaR, SPIN, DPO and GRPO"), none on
tic-tac-toe or Kuhn; the off-policy corrections other than the served run's truncated
importance weight (the default ``rollout.is_cap``, one version stale) have no recorded
multi-seed run.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Row:
    game: str
    method: str  # the recipe and what varies: objective, correction, sampler, step size
    objective: str
    correction: str  # the off-policy correction of its samples ("none": on-policy, in turn)
    figure: str
    seeds: tuple[int, ...]
    values: tuple[float, ...]
    source: str  # the section of benchmarks/RESULTS.md (or the page) that records it


NONE = "none (in turn)"
TIS = "truncated importance weight, cap 2 (1 version stale)"
NON_LOSS, WINS = "non-loss vs minimax", "wins vs random"
LAST, AVERAGE = "exploitability, last iterate", "exploitability, average of iterates"

ROWS = (
    # ---- tic-tac-toe ------------------------------------------------------------------------
    Row(
        "tictactoe",
        "default run (tictactoe recipe), 40 it.",
        "pg",
        NONE,
        NON_LOSS,
        (0, 1, 2, 3, 4),
        (0.37, 0.47, 0.39, 0.55, 0.57),
        "docs/learning.md, The default run",
    ),
    Row(
        "tictactoe",
        "default run (tictactoe recipe), 40 it.",
        "pg",
        NONE,
        WINS,
        (0, 1, 2, 3, 4),
        (0.65, 0.53, 0.50, 0.47, 0.53),
        "docs/learning.md, The default run",
    ),
    Row(
        "tictactoe",
        "r3: mirror self-play, 20 it.",
        "pg",
        NONE,
        NON_LOSS,
        (0, 1, 2),
        (0.26, 0.00, 0.24),
        "The default run on every yardstick, 3 seeds",
    ),
    Row(
        "tictactoe",
        "r3: mirror self-play, 20 it.",
        "pg",
        NONE,
        WINS,
        (0, 1, 2),
        (0.64, 0.71, 0.62),
        "The default run on every yardstick, 3 seeds",
    ),
    Row(
        "tictactoe",
        "g5 (tictactoe-selfplay), 20 it.",
        "pg",
        NONE,
        NON_LOSS,
        (0, 1, 2, 3, 4, 5),
        (0.44, 0.05, 0.19, 0.30, 0.18, 0.15),
        "The default run: a per-position baseline, the learner's greedy self",
    ),
    Row(
        "tictactoe",
        "g5 (tictactoe-selfplay), 20 it.",
        "pg",
        NONE,
        WINS,
        (0, 1, 2, 3, 4, 5),
        (0.64, 0.69, 0.54, 0.65, 0.64, 0.75),
        "The default run: a per-position baseline, the learner's greedy self",
    ),
    Row(
        "tictactoe",
        "g5, weights averaged (EMA 0.9), 20 it.",
        "pg",
        NONE,
        NON_LOSS,
        (0, 1, 2, 3, 4, 5),
        (0.29, 0.42, 0.36, 0.21, 0.04, 0.06),
        "Averaging the weights",
    ),
    Row(
        "tictactoe",
        "tictactoe-cosine, 180 it. (mean of last 3 evaluations)",
        "pg",
        NONE,
        NON_LOSS,
        (0, 1, 2, 3, 4),
        (0.695, 0.662, 0.830, 0.657, 0.772),
        "Five seeds for the two longer recipes",
    ),
    Row(
        "tictactoe",
        "tictactoe-cosine, 180 it.",
        "pg",
        NONE,
        WINS,
        (0, 1, 2, 3, 4),
        (0.79, 0.725, 0.70, 0.69, 0.70),
        "Five seeds for the two longer recipes",
    ),
    Row(
        "tictactoe",
        "default run, in-process (2 threads), 40 it.",
        "pg",
        NONE,
        NON_LOSS,
        (0, 1),
        (0.60, 0.65),
        "Served, overlapped rollouts",
    ),
    Row(
        "tictactoe",
        "default run, served and overlapped, 40 it.",
        "pg",
        TIS,
        NON_LOSS,
        (0, 1),
        (0.49, 0.47),
        "Served, overlapped rollouts",
    ),
    Row(
        "tictactoe",
        "default run, in-process (2 threads), 40 it.",
        "pg",
        NONE,
        WINS,
        (0, 1),
        (0.59, 0.50),
        "Served, overlapped rollouts",
    ),
    Row(
        "tictactoe",
        "default run, served and overlapped, 40 it.",
        "pg",
        TIS,
        WINS,
        (0, 1),
        (0.46, 0.55),
        "Served, overlapped rollouts",
    ),
    # ---- Kuhn poker (exact exploitability: lower is better) --------------------------------
    Row(
        "kuhn-poker",
        "tiny, magnet 0.5/0.05, lr 1e-4, 20 min",
        "pg",
        NONE,
        LAST,
        (0, 1, 2),
        (0.041, 0.219, 0.064),
        "Kuhn poker with a tuned magnet, 3 seeds",
    ),
    Row(
        "kuhn-poker",
        "tiny, magnet 0.5/0.05, lr 1e-4, 20 min",
        "pg",
        NONE,
        AVERAGE,
        (0, 1, 2),
        (0.047, 0.054, 0.061),
        "Kuhn poker with a tuned magnet, 3 seeds",
    ),
    Row(
        "kuhn-poker",
        "tiny, magnet 0.5/0.05, lr 5e-5, 20 min",
        "pg",
        NONE,
        LAST,
        (0, 1, 2),
        (0.093, 0.095, 0.088),
        "Kuhn poker with a tuned magnet, 3 seeds",
    ),
    Row(
        "kuhn-poker",
        "tiny, magnet 0.5/0.05, lr 5e-5, 20 min",
        "pg",
        NONE,
        AVERAGE,
        (0, 1, 2),
        (0.045, 0.052, 0.055),
        "Kuhn poker with a tuned magnet, 3 seeds",
    ),
    Row(
        "kuhn-poker",
        "tiny, pool sampler + magnet, lr 5e-5, 140 it.",
        "pg",
        NONE,
        LAST,
        (0, 1, 2),
        (0.076, 0.116, 0.061),
        "The pool sampler with the same magnet",
    ),
    Row(
        "kuhn-poker",
        "tiny, pool sampler + magnet, lr 5e-5, 140 it.",
        "pg",
        NONE,
        AVERAGE,
        (0, 1, 2),
        (0.044, 0.060, 0.051),
        "The pool sampler with the same magnet",
    ),
    Row(
        "kuhn-poker",
        "tiny, legal choice + magnet, lr 5e-5, 134 it.",
        "legal-pg",
        NONE,
        LAST,
        (0, 1, 2, 3, 4),
        (0.082, 0.091, 0.062, 0.128, 0.046),
        "Five seeds for the two longer recipes",
    ),
    Row(
        "kuhn-poker",
        "tiny, legal choice + magnet, lr 5e-5, 134 it.",
        "legal-pg",
        NONE,
        AVERAGE,
        (0, 1, 2, 3, 4),
        (0.045, 0.052, 0.041, 0.063, 0.048),
        "Five seeds for the two longer recipes",
    ),
    Row(
        "kuhn-poker",
        "SmolLM2-135M, legal choice, 9-28 it. (20-58 min)",
        "pg",
        NONE,
        LAST,
        (0, 1, 2),
        (0.335, 0.296, 0.591),
        "SmolLM2-135M learns Kuhn poker",
    ),
    Row(
        "kuhn-poker",
        "SmolLM2-135M, legal choice, 6-10 it. (20-34 min)",
        "legal-pg",
        NONE,
        LAST,
        (0, 1, 2),
        (0.335, 0.502, 0.349),
        "SmolLM2-135M learns Kuhn poker",
    ),
)


def summary(row: Row) -> dict[str, float]:
    values = row.values
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
        "range": max(values) - min(values),
    }


def table(rows: tuple[Row, ...]) -> str:
    lines = [
        "| game | method | objective | off-policy correction | figure | seeds | values | mean "
        "| std | min-max |",
        "|---|---|---|---|---|---|---|---:|---:|---|",
    ]
    for row in rows:
        s = summary(row)
        seeds = " ".join(map(str, row.seeds))
        values = " ".join(f"{v:g}" for v in row.values)
        lines.append(
            f"| {row.game} | {row.method} | {row.objective} | {row.correction} | {row.figure} "
            f"| {seeds} | {values} | {s['mean']:.3f} | {s['std']:.3f} "
            f"| {s['min']:g}-{s['max']:g} |"
        )
    return "\n".join(lines)


def ratios(rows: tuple[Row, ...]) -> str:
    """For each game and figure: the largest spread over the smallest, and whose they are
    (rows of three seeds or more: the deviation of two values says little)."""
    lines = []
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if len(row.seeds) >= 3:
            groups.setdefault((row.game, row.figure), []).append(row)
    for (game, figure), members in groups.items():
        if len(members) < 2:
            continue
        spread = sorted(members, key=lambda r: summary(r)["std"])
        low, high = spread[0], spread[-1]
        lo, hi = summary(low)["std"], summary(high)["std"]
        ratio = f"{hi / lo:.1f}x" if lo > 0 else "inf"
        lines.append(
            f"- {game}, {figure}: std {lo:.3f} ({low.method}, {low.objective}) to {hi:.3f} "
            f"({high.method}, {high.objective}): {ratio}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="every row with its values")
    args = parser.parse_args()
    if args.json:
        print(json.dumps([{**asdict(r), **summary(r)} for r in ROWS], indent=2))
        return
    print(table(ROWS))
    print()
    print(ratios(ROWS))


if __name__ == "__main__":
    main()
