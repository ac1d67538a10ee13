"""OpenSpiel games through the adapter: Kuhn poker against our own, Leduc poker beside CFR.

    python benchmarks/openspiel_games.py kuhn --seeds 0 1 2 --iterations 30 --out DIR
    python benchmarks/openspiel_games.py leduc --seeds 0 1 2 --iterations 20 --out DIR
    python benchmarks/openspiel_games.py cfr --iterations 200

``kuhn`` trains the tiny model on our Kuhn poker (``kuhn-poker``) and on OpenSpiel's through
the adapter (``openspiel:kuhn_poker``) with one recipe — mirror self-play with a moving KL
magnet (``train.kl_coef=0.5``, ``train.reference_update=0.05``, ``train.lr=5e-5``), a
200-step cold start on the ``random`` player's transcripts, 128 matches an iteration — and
prints each run's exact exploitability (last iterate, average of iterates) after the cold
start and at the end, with the spread over the seeds.

``leduc`` trains the same recipe on ``openspiel:leduc_poker`` (936 information sets, scored
exactly every iteration), choosing among the legal answers (``generation.choice=legal``,
``objective=legal-pg``), and prints the exploitability after the cold start and at the end.

``cfr`` runs OpenSpiel's CFR (``pyspiel.CFRSolver``) on Leduc poker and prints the
exploitability of its average policy and the seconds it took: the yardstick.

Needs the ``openspiel`` extra. Every run is a run folder under ``--out``; a finished one is
read again rather than rerun.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import time
from pathlib import Path

RECIPE = [
    "cold_start.players=[random]",
    "cold_start.steps=200",
    "train.kl_coef=0.5",
    "train.reference_update=0.05",
    "train.lr=5e-5",
    "eval.matches=100",
    "checkpoint_every=1000",
]
# Leduc through free writing: the tiny model after its cold start writes too few legal moves
# to finish matches, so Leduc's runs choose among the legal answers (the `legal-pg` recipe).
LEDUC = ["generation.choice=legal", "objective=legal-pg"]
CURVES = ("exploitability/last", "exploitability/iterates_average")


def trained(game: str, seed: int, args: argparse.Namespace) -> list[dict[str, str]]:
    """The run's metrics.csv rows, training it first unless it finished before."""
    name = f"{game.replace(':', '-')}-{seed}"
    folder = args.out / name
    if not (folder / "summary.json").exists():
        from selfplay.core.plan.config_loader import build_config
        from selfplay.core.run.trainer import train

        flags = {"game": game, "iterations": args.iterations, "matches": 128, "seed": seed}
        flags |= {"out": args.out, "name": name}
        extra = LEDUC if "leduc" in game else []
        train(build_config(None, flags, [*RECIPE, *extra, f"threads={args.threads}"]))
    with (folder / "metrics.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def spread(values: list[float]) -> str:
    mean = statistics.fmean(values)
    return f"{mean:.3f} ({min(values):.3f}-{max(values):.3f})"


def report(games: list[str], args: argparse.Namespace) -> None:
    found = {}
    for game in games:
        for seed in args.seeds:
            rows = trained(game, seed, args)
            found[(game, seed)] = {
                "iterations": len(rows),
                "seconds": float(rows[-1]["elapsed_seconds"]),
                **{f"{key}/first": float(rows[0][key]) for key in CURVES},
                **{f"{key}/final": float(rows[-1][key]) for key in CURVES},
                "curve": [float(r[CURVES[0]]) for r in rows],
            }
            print(game, seed, json.dumps(found[(game, seed)]), flush=True)
    seeds = " | ".join(f"seed {s}" for s in args.seeds)
    print(f"| game | figure | {seeds} | mean (min-max) |")
    print("|---|---|" + "---|" * (len(args.seeds) + 1))
    for game in games:
        for key in CURVES:
            for when in ("first", "final"):
                values = [found[(game, s)][f"{key}/{when}"] for s in args.seeds]
                cells = " | ".join(f"{v:.3f}" for v in values)
                label = f"{key.split('/')[1]}, {'iteration 1' if when == 'first' else 'final'}"
                print(f"| {game} | {label} | {cells} | {spread(values)} |")
    (args.out / "openspiel_games.json").write_text(
        json.dumps({f"{g}/{s}": v for (g, s), v in found.items()}, indent=2) + "\n"
    )


def cfr(args: argparse.Namespace) -> None:
    import pyspiel

    game = pyspiel.load_game("leduc_poker")
    solver = pyspiel.CFRSolver(game)
    started = time.perf_counter()
    marks = {1, 10, 50, 100, 200, 500, 1000, args.iterations}
    for i in range(1, args.iterations + 1):
        solver.evaluate_and_update_policy()
        if i in marks:
            seconds = time.perf_counter() - started
            value = pyspiel.exploitability(game, solver.average_policy())
            print(f"CFR iteration {i}: exploitability {value:.4f} after {seconds:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["kuhn", "leduc", "cfr"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("openspiel-games"))
    args = parser.parse_args()
    args.iterations = args.iterations or {"kuhn": 30, "leduc": 20, "cfr": 200}[args.what]
    if args.what == "cfr":
        cfr(args)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    games = {"kuhn": ["kuhn-poker", "openspiel:kuhn_poker"], "leduc": ["openspiel:leduc_poker"]}
    report(games[args.what], args)


if __name__ == "__main__":
    main()
