"""Training curves of groups of runs, each a mean over its seeds with the range shaded.

Each ``--group LABEL=GLOB`` names the run folders of one setting (one per seed, as
benchmarks/served_rollouts.py ``--keep`` leaves them); the figure has a panel per metrics.csv
column given with ``--columns`` (iteration on the x axis). Written for the off-policy
corrections of overlapped training (benchmarks/RESULTS.md):

    python benchmarks/run_curves.py --out benchmarks/figures/overlap-corrections.png \\
      --group "in turn=RUNS/inturn-s*/*" --group "decoupled=RUNS/decoupled-s*/*" ...
"""

from __future__ import annotations

import argparse
import csv
import glob
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLUMNS = ("share/draws", "invalid_rate", "entropy", "rollout/mismatch_kl")


def series(folder: Path, column: str) -> list[float | None]:
    with (folder / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    # runs written before an outcome no match had was logged as 0 left it blank
    missing = 0.0 if column.startswith("share/") else None
    return [float(r[column]) if r.get(column) not in (None, "") else missing for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--group", action="append", required=True, help="LABEL=GLOB")
    parser.add_argument("--columns", nargs="+", default=list(COLUMNS))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    figure, axes = plt.subplots(1, len(args.columns), figsize=(4.2 * len(args.columns), 3.6))
    for spec in args.group:
        label, _, pattern = spec.partition("=")
        folders = sorted(Path(p) for p in glob.glob(pattern) if (Path(p) / "metrics.csv").exists())
        if not folders:
            message = f"--group {spec!r}: no run folder matches {pattern!r} (LABEL=GLOB)"
            print(message, file=sys.stderr)
            raise SystemExit(2)
        for axis, column in zip(axes, args.columns, strict=True):
            runs = [series(f, column) for f in folders]
            width = min(len(r) for r in runs)
            points = [[r[i] for r in runs if r[i] is not None] for i in range(width)]
            x = [i + 1 for i, p in enumerate(points) if p]
            mean = [sum(p) / len(p) for p in points if p]
            line = axis.plot(x, mean, label=f"{label} ({len(folders)} seeds)")[0]
            low, high = [min(p) for p in points if p], [max(p) for p in points if p]
            axis.fill_between(x, low, high, color=line.get_color(), alpha=0.12)
            axis.set_title(column)
            axis.set_xlabel("iteration")
    axes[0].legend(fontsize=8)
    figure.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
