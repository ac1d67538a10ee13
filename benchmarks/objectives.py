"""Objective benchmark: STaR, SPIN, DPO and GRPO on math-solver with the tiny model, side by side.

Every recipe of a seed starts from the same deliberately weak start (a short cold start on
the bank's worked solutions, made once per seed and saved as a model folder) and trains on
fresh one-digit sums (the ``sums`` warm-up topic, levels 1-2: a + b and a + b + c) for the
same wall-clock budget, evaluating greedily every few iterations on the bank's 27 held-out
sums of those levels (``eval/held_out/accuracy``) and on the percentages topic it never trains on
(``eval/transfer/accuracy``). Each (recipe, seed) is one run folder; the script prints the
start, best and final accuracy of each and writes every curve to a CSV (and a PNG when
matplotlib is installed).

    python benchmarks/objectives.py --recipes star spin dpo grpo --seeds 0 1 2 --minutes 15
    python benchmarks/objectives.py --out DIR --collect      # tabulate finished runs in DIR

Recipes:
- ``star``: ``sft`` keeping the answers the verifier passes, with STaR's hinted retries;
- ``spin``: ``dpo`` with the bank's worked solution as the chosen side (SPIN);
- ``dpo``: ``dpo`` on best-vs-worst pairs by the verifier's verdict (the verifier as judge);
- ``grpo``: ``pg`` with the group baseline (the policy-gradient reference point).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
from pathlib import Path

# The recipes are the registered math-* ones (recipes/math.py, `selfplay recipes`); here is how
# each was measured, passed as the user's own settings.
RECIPES = ("star", "spin", "dpo", "grpo")  # math-star, ...
MEASURED = ["eval.every=5", "eval.matches=100", "checkpoint_every=1000"]
CURVES = ("eval/held_out/accuracy", "eval/transfer/accuracy")


def cold_started(seed: int, out: Path, extra: list[str]) -> Path:
    """The tiny model after the shared short cold start of ``seed``, as a model folder."""
    folder = out / f"start-seed{seed}"
    if (folder / "config.json").exists():
        return folder
    import torch

    from selfplay.core.plan.build import build_game, build_learner
    from selfplay.core.plan.config_loader import build_config
    from selfplay.core.plan.recipes import resolve
    from selfplay.core.train.cold_start import warm_up

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    flags = {"seed": seed, "recipe": "math-sums"}
    config = resolve(build_config(flags=flags, overrides=[*MEASURED, *extra]))
    learner, game = build_learner(config), build_game(config)
    warm_up(learner, game, config, print)
    learner.model.save_pretrained(folder)
    learner.tokenizer.save_pretrained(folder)
    return folder


def run(recipe: str, seed: int, minutes: float, out: Path, extra: list[str]) -> Path:
    name = f"{recipe}-seed{seed}"
    start = cold_started(seed, out, extra)
    sets = [*MEASURED, f"seed={seed}", f"minutes={minutes}", "threads=1", *extra]
    sets += [f"model={start}", "cold_start.steps=0", "model_options.include_system=false"]
    command = [sys.executable, "-m", "selfplay.core.commands.cli", "run", "--iterations", "100000"]
    command += ["--recipe", f"math-{recipe}", "--out", str(out), "--name", name]
    for item in sets:
        command += ["--set", item]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"{name} failed with exit code {done.returncode}")
    return out / name


def curve(folder: Path) -> list[dict[str, float]]:
    with (folder / "metrics.csv").open() as f:
        rows = [row for row in csv.DictReader(f) if row.get(CURVES[0])]
    return [
        {
            "iteration": float(row["iteration"]),
            "minutes": float(row["elapsed_seconds"]) / 60,
            **{key: float(row[key]) for key in CURVES if row.get(key)},
        }
        for row in rows
    ]


def summary(folder: Path) -> dict[str, float]:
    """Accuracy at the start (the cold-started model), best, and final (mean of the last 2)."""
    points = curve(folder)
    start = _before(folder)
    held = [p[CURVES[0]] for p in points]
    return {
        "start": start,
        "best": max(held, default=start),
        "final": sum(held[-2:]) / len(held[-2:]) if held else start,
        "evaluations": float(len(held)),
        "minutes": points[-1]["minutes"] if points else 0.0,
    }


def _before(folder: Path) -> float:
    """The held-out accuracy of the cold-started model: the first row's value, when logged."""
    import torch

    from selfplay.core.run.folder.checkpoint import latest

    path = latest(folder)
    if path is None:
        return float("nan")
    state = torch.load(path / "state.ckpt", map_location="cpu", weights_only=True)
    return float(state["progress"].get("before_tasks", {}).get(CURVES[0], float("nan")))


def plot(folders: list[Path], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for folder in folders:
        points = curve(folder)
        for axis, key in zip(axes, CURVES, strict=True):
            axis.plot(
                [p["minutes"] for p in points], [p.get(key) for p in points], label=folder.name
            )
    for axis, key in zip(axes, CURVES, strict=True):
        axis.set_title(key)
        axis.set_xlabel("minutes")
    axes[0].set_ylabel("greedy accuracy")
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="+", default=sorted(RECIPES), choices=sorted(RECIPES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--out", type=Path, default=Path("runs/objectives"))
    parser.add_argument("--set", action="append", default=[], help="any RunConfig key=value")
    parser.add_argument("--collect", action="store_true", help="only tabulate finished runs")
    args = parser.parse_args()
    folders = []
    for recipe in args.recipes:
        for seed in args.seeds:
            folder = args.out / f"{recipe}-seed{seed}"
            if not args.collect:
                folder = run(recipe, seed, args.minutes, args.out, args.set)
            if (folder / "metrics.csv").exists():
                folders.append(folder)
    print(f"{'run':<16} {'start':>6} {'best':>6} {'final':>6} {'evals':>6} {'minutes':>7}")
    for folder in folders:
        s = summary(folder)
        print(
            f"{folder.name:<16} {s['start']:6.3f} {s['best']:6.3f} {s['final']:6.3f} "
            f"{s['evaluations']:6.0f} {s['minutes']:7.1f}"
        )
    with (args.out / "curves.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["run", "iteration", "minutes", *CURVES])
        for folder in folders:
            for p in curve(folder):
                writer.writerow(
                    [folder.name, p["iteration"], p["minutes"], *(p.get(k) for k in CURVES)]
                )
    if plot(folders, args.out / "objectives.png"):
        print("plot:", args.out / "objectives.png")


if __name__ == "__main__":
    main()
