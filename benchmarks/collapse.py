"""Does self-play collapse when it runs long, and which opponents keep it from collapsing?

    python benchmarks/collapse.py --out DIR                     # every arm, seeds 0-2, 360 it.
    python benchmarks/collapse.py --arms latest keep-best --seeds 0 --out DIR
    python benchmarks/collapse.py --out DIR --report            # read the finished runs only
    python benchmarks/collapse.py --out DIR --report --plot curves.png

Tic-tac-toe's own recipe (``tictactoe``: the default run's settings) on the tiny model, for
``--iterations`` (360: twice the 30-minute recipe's 180), one thread, evaluated every 10
iterations on 200 matches against each scripted player (benchmarks/learning.py). The arms
differ only in who sits opposite the learner in training:

- ``latest``: mirror self-play (the recipe's own);
- ``pool``: the latest self 80% of the time, else a past snapshot (``--opponent pool``);
- ``psro``: PSRO with a Nash meta-solver over the snapshots (``--opponent psro:nash``);
- ``keep-best``: mirror self-play, and the learner goes back to the pool's best snapshot when
  a new one scores below it in cross-play (``pool.keep_best``; docs/opponents.md).

No scripted player is ever in training; the scripted players only measure. Each run is
``DIR/ARM-SEED/run``: one that finished is skipped and one that was stopped goes on from its
newest checkpoint (benchmarks/learning.py), so a stopped study goes on where it left off. The
report prints, per run, non-loss against ``minimax`` and wins against ``random`` at every
evaluation, and says whether and when it collapsed: the first evaluation at which non-loss
against ``minimax`` fell ``--drop`` (0.2) or more below its best so far and stayed below for
the next evaluation too (one bad evaluation of 200 matches is noise, not a collapse).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARMS = {
    "latest": ["opponent=latest"],
    "pool": ["opponent=pool"],
    "psro": ["opponent=psro:nash"],
    "keep-best": ["opponent=latest", "pool.keep_best=true"],
}
MINIMAX, RANDOM = "eval/minimax/non_loss_rate", "eval/random/win_rate"


def command(arm: str, seed: int, iterations: int, folder: Path) -> list[str]:
    sets = [item for setting in ARMS[arm] for item in ("--set", setting)]
    return [
        sys.executable, str(ROOT / "benchmarks" / "learning.py"), "--recipe", "tictactoe",
        "--iterations", str(iterations), "--minutes", "1000", "--threads", "1",
        "--set", f"seed={seed}", *sets, "--out", str(folder),
    ]  # fmt: skip


def curves(run: Path) -> list[tuple[int, float, float]]:
    """(iteration, non-loss against minimax, wins against random) at every evaluation."""
    with open(run / "metrics.csv", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get(MINIMAX)]
    return [(int(row["iteration"]), float(row[MINIMAX]), float(row[RANDOM])) for row in rows]


def collapse(values: list[tuple[int, float]], drop: float) -> tuple[int, float, float] | None:
    """(iteration, best so far, value) of the first evaluation ``drop`` below the best so far
    whose next evaluation is below it too; None when that never happens."""
    best = float("-inf")
    for i, (iteration, value) in enumerate(values):
        best = max(best, value)
        following = values[i + 1][1] if i + 1 < len(values) else None
        if value <= best - drop and following is not None and following <= best - drop:
            return iteration, best, value
    return None


def last_three(points: list[tuple[int, float, float]]) -> float:
    """The mean non-loss against minimax of a run's last three evaluations."""
    return sum(v for _, v, _ in points[-3:]) / len(points[-3:])


def minutes(run: Path) -> float:
    """The run's training time; a run resumed by an older selfplay restarted its clock at 0
    (elapsed_seconds now goes on), so each restart adds the time before it."""
    with open(run / "metrics.csv", newline="") as handle:
        seconds = [float(row["elapsed_seconds"]) for row in csv.DictReader(handle)]
    before = sum(a for a, b in itertools.pairwise(seconds) if b < a)
    return (before + seconds[-1]) / 60 if seconds else 0.0


def spread(values: list[float]) -> str:
    if not values:
        return "none finished"
    mean = sum(values) / len(values)
    return f"{mean:.3f} ({min(values):.3f}-{max(values):.3f}, {len(values)} seeds)"


def summary(out: Path, arm: str, seeds: list[int], drop: float, half: int) -> str:
    """One line per arm over the finished seeds: where its runs end, and how low they fall
    after ``half`` (the 180 iterations of the 30-minute recipe)."""
    last, late_low, late_collapses, times = [], [], 0, []
    for seed in seeds:
        run = out / f"{arm}-{seed}" / "run"
        if not (run / "summary.json").is_file():
            continue
        points = curves(run)
        last.append(last_three(points))
        after = [(i, v) for i, v, _ in points if i > half]
        late_low.append(min(v for _, v in after) if after else float("nan"))
        fell = collapse([(i, v) for i, v, _ in points], drop)
        late_collapses += bool(fell and fell[0] > half)
        times.append(minutes(run))
    lows = " ".join(f"{v:.2f}" for v in late_low)
    return (
        f"{arm}: last three {spread(last)}; lowest after {half}: {lows}; "
        f"collapses after {half}: {late_collapses}; minutes {' '.join(f'{t:.0f}' for t in times)}"
    )


def plot(out: Path, arms: list[str], seeds: list[int], path: Path) -> None:
    """Non-loss against minimax and wins against random, a panel per arm, a line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, len(arms), figsize=(3.6 * len(arms), 6), sharex=True)
    axes = axes.reshape(2, len(arms))
    for column, arm in enumerate(arms):
        for seed in seeds:
            run = out / f"{arm}-{seed}" / "run"
            if not (run / "metrics.csv").is_file():
                continue
            points = curves(run)
            its = [i for i, _, _ in points]
            axes[0, column].plot(its, [v for _, v, _ in points], label=f"seed {seed}")
            axes[1, column].plot(its, [w for _, _, w in points], label=f"seed {seed}")
        axes[0, column].set_title(arm)
        axes[1, column].set_xlabel("iteration")
        for row in (0, 1):
            axes[row, column].set_ylim(0, 1)
            axes[row, column].grid(alpha=0.3)
    axes[0, 0].set_ylabel("non-loss vs minimax")
    axes[1, 0].set_ylabel("wins vs random")
    axes[0, 0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    print(f"curves: {path}")


def report(out: Path, arms: list[str], seeds: list[int], drop: float) -> None:
    for arm in arms:
        for seed in seeds:
            run = out / f"{arm}-{seed}" / "run"
            if not (run / "summary.json").is_file():
                print(f"{arm} seed {seed}: not finished ({run})")
                continue
            points = curves(run)
            minimax = " ".join(f"{v:.2f}" for _, v, _ in points)
            randoms = " ".join(f"{w:.2f}" for _, _, w in points)
            fell = collapse([(i, v) for i, v, _ in points], drop)
            verdict = (
                f"collapsed at {fell[0]} (best so far {fell[1]:.2f}, then {fell[2]:.2f})"
                if fell
                else "no collapse"
            )
            print(f"{arm} seed {seed}: {verdict}; last three {last_three(points):.3f}")
            print(f"  non-loss vs minimax every 10: {minimax}")
            print(f"  wins vs random every 10:      {randoms}")
    for arm in arms:
        print(summary(out, arm, seeds, drop, half=180))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=list(ARMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--iterations", type=int, default=360)
    parser.add_argument("--drop", type=float, default=0.2, help="what counts as a collapse")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--report", action="store_true", help="only read the finished runs")
    parser.add_argument("--plot", type=Path, help="draw the curves into this PNG file")
    args = parser.parse_args()
    if not args.report:
        for seed in args.seeds:
            for arm in args.arms:
                folder = args.out / f"{arm}-{seed}"
                if (folder / "run" / "summary.json").is_file():
                    continue
                folder.parent.mkdir(parents=True, exist_ok=True)
                print(f"{arm} seed {seed}: {' '.join(command(arm, seed, args.iterations, folder))}")
                subprocess.run(command(arm, seed, args.iterations, folder), check=True)
    report(args.out, args.arms, args.seeds, args.drop)
    if args.plot:
        plot(args.out, args.arms, args.seeds, args.plot)


if __name__ == "__main__":
    main()
