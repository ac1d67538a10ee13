"""Opponent-sampler benchmark: exact exploitability over training, sampler against sampler.

Trains the tiny model on Kuhn poker (or rock-paper-scissors) once per sampler, with the same
cold start, seed and wall-clock budget, and logs the exact exploitability of the last iterate,
of the average of all iterates and of the sampler's mixture over the pool after every
iteration. Writes one CSV of every run's curve and, when matplotlib is installed, a PNG.

    python benchmarks/opponents.py                                  # Kuhn, 4 samplers, 5 min each
    python benchmarks/opponents.py --game rock-paper-scissors --minutes 2
    python benchmarks/opponents.py --samplers latest mmd psro:nash  # 'mmd' = latest + moving KL
    python benchmarks/opponents.py --samplers mmd:0.5:0.05          # mmd:KL_COEF:REFERENCE_UPDATE
    python benchmarks/opponents.py --out DIR --samplers ... --collect  # tabulate runs in DIR

`mmd` is mirror self-play with a KL pull toward a reference that trails the policy
(train.reference_update), the magnetic-mirror-descent option: `mmd` alone is the first setting
measured (KL coefficient 0.2, the reference moved 0.05 of the way after every iteration), and
`mmd:KL:RATE` names both, e.g. `mmd:0.5:0.05` (the magnet's strength and its speed).
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from pathlib import Path

import torch

from selfplay.core.plan.config_loader import build_config
from selfplay.core.run.trainer import train

COMMON = [
    "cold_start.players=[random]",
    "eval.matches=200",
    "pool.snapshot_every=5",
    "pool.size=10",
    "pool.matches_per_pair=64",
]
COLD_START = {"kuhn-poker": 200, "rock-paper-scissors": 100}
VARIANTS = {  # sampler label -> (opponent, extra settings)
    "mmd": ("latest", ["train.kl_coef=0.2", "train.reference_update=0.05"]),
}
CURVES = ("exploitability/last", "exploitability/iterates_average", "exploitability/pool_average")


def variant(label: str) -> tuple[str, list[str]]:
    """The opponent and extra settings a sampler label stands for."""
    if label in VARIANTS:
        return VARIANTS[label]
    if label.startswith("mmd:"):
        try:
            kl, rate = (float(x) for x in label.split(":")[1:])
        except ValueError:
            hint = f"{label!r}: write mmd:KL_COEF:REFERENCE_UPDATE, e.g. mmd:0.5:0.05"
            raise ValueError(hint) from None
        return "latest", [f"train.kl_coef={kl}", f"train.reference_update={rate}"]
    return label, []


def run(game: str, label: str, args: argparse.Namespace, out: Path) -> list[dict[str, str]]:
    opponent, extra = variant(label)
    config = build_config(
        None,
        {
            "game": game,
            "opponent": opponent,
            "iterations": args.iterations,
            "minutes": args.minutes,
            "matches": args.matches,
            "seed": args.seed,
            "out": out,
            "name": label.replace(":", "-"),
        },
        [*COMMON, f"cold_start.steps={COLD_START.get(game, 200)}", *extra, *args.set],
    )
    return read_metrics(train(config).folder.path)


def read_metrics(folder: Path) -> list[dict[str, str]]:
    with open(folder / "metrics.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def summarise(label: str, rows: list[dict[str, str]]) -> str:
    def series(key: str) -> list[float]:
        return [float(r[key]) for r in rows if r.get(key)]

    parts = [f"{label:>12}: {len(rows)} iterations in {float(rows[-1]['elapsed_seconds']):.0f} s"]
    for key in CURVES:
        values = series(key)
        if values:
            short = key.split("/")[1]
            parts.append(f"{short} final {values[-1]:.3f} best {min(values):.3f}")
    return "; ".join(parts)


def plot(curves: dict[str, list[dict[str, str]]], game: str, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for label, rows in curves.items():
        seconds = [float(r["elapsed_seconds"]) / 60 for r in rows]
        axes[0].plot(seconds, [float(r[CURVES[0]]) for r in rows], label=label)
        average = CURVES[2] if any(r.get(CURVES[2]) for r in rows) else CURVES[1]
        points = [(s, float(r[average])) for s, r in zip(seconds, rows, strict=True) if r[average]]
        axes[1].plot(*zip(*points, strict=True), label=f"{label} ({average.split('/')[1]})")
    axes[0].set_title(f"{game}: last iterate")
    axes[1].set_title(f"{game}: average policy")
    for ax in axes:
        ax.set_xlabel("minutes")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("exploitability (NashConv / 2)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="kuhn-poker")
    parser.add_argument("--samplers", nargs="+", default=["latest", "pool", "psro:nash", "elo"])
    parser.add_argument("--minutes", type=float, default=5.0, help="budget per sampler")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--matches", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[], help="any RunConfig KEY=VALUE")
    parser.add_argument(
        "--collect", action="store_true", help="only tabulate and plot finished runs in --out"
    )
    args = parser.parse_args()
    for label in args.samplers:  # a bad label fails here, not after the first sampler's run
        try:
            variant(label)
        except ValueError as err:
            parser.error(str(err))
    torch.set_num_threads(args.threads)
    args.set.append(f"threads={args.threads}")
    out = args.out or Path(tempfile.mkdtemp(prefix="selfplay-opponents-"))
    if args.collect:
        curves = {label: read_metrics(out / label.replace(":", "-")) for label in args.samplers}
    else:
        curves = {label: run(args.game, label, args, out) for label in args.samplers}
    table = out / f"opponents-{args.game}.csv"
    with open(table, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sampler", "iteration", "elapsed_seconds", *CURVES])
        for label, rows in curves.items():
            for r in rows:
                writer.writerow(
                    [label, r["iteration"], r["elapsed_seconds"], *(r.get(k, "") for k in CURVES)]
                )
    for label, rows in curves.items():
        print(summarise(label, rows))
    picture = out / f"opponents-{args.game}.png"
    print("curves:", table, "| plot:", picture if plot(curves, args.game, picture) else "none")


if __name__ == "__main__":
    main()
