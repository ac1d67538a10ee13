"""Served, overlapped rollouts against the in-process loop: speed from added cores, the cost
where no core is added, and the closing table (learning is not traded for speed).

Each mode trains the same seed from the same recipe (the default tic-tac-toe run unless
``--set`` changes it) in a process of its own, one after another, and is timed over its
iterations only: from the end of the first iteration to the end of the last (the cold start,
the evaluations and the first iteration's warm-up left out), as learner completions per second.

    inprocess-1   in-process, in turn, pinned to one core (taskset), 1 thread
    inprocess-2   in-process, in turn, both cores, 2 threads
    served-1+1    the trainer on one core and one `selfplay serve` worker on the other (1
                  thread each, pinned by rollout.pin), overlapped (rollout.max_staleness=1)
    sync-1+1      the same two processes, in turn (max_staleness 0): the served path's own
                  cost without overlap

Ratios measured in one run are what count on a shared machine:

    scale-out      served-1+1 / inprocess-1   (the phase split of the default run allows ~1.55)
    cost           served-1+1 / inprocess-2   (no core added: what serving costs)

    python benchmarks/served_rollouts.py [--seed 0] [--modes inprocess-1,served-1+1]
    python benchmarks/served_rollouts.py --seeds 0 1 2 --modes inprocess-2,served-1+1 --table

``--table`` also prints each run's closing evaluation with its Wilson intervals and whether
the served run's rates fall inside the in-process run's intervals (both opponents).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = {
    "inprocess-1": (["taskset", "-c", "0"], ["threads=1"]),
    "inprocess-2": ([], ["threads=2"]),
    "served-1+1": (
        [],
        ["threads=1", "rollout.workers=1", "rollout.worker_threads=1", "rollout.max_staleness=1"],
    ),
    "sync-1+1": ([], ["threads=1", "rollout.workers=1", "rollout.worker_threads=1"]),
}


def child(args: argparse.Namespace) -> None:
    """Train once and print the closing table as JSON (a child process)."""
    from selfplay.core.plan.config_loader import build_config
    from selfplay.core.run.trainer import train

    flags = {"seed": args.seed, "out": Path(args.out), "name": args.name}
    if args.iterations:
        flags["iterations"] = args.iterations
    result = train(build_config(None, flags, args.set))
    after = {
        name: {
            "win_rate": r.win_rate,
            "win_interval": list(r.win_interval),
            "non_loss_rate": r.non_loss_rate,
            "non_loss_interval": list(r.non_loss_interval),
        }
        for name, r in result.after.items()
    }
    print("RESULT " + json.dumps(after), flush=True)


def timed(folder: Path) -> tuple[float, int]:
    """(seconds from the end of the first iteration to the end of the last, completions)."""
    with (folder / "metrics.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    seconds = float(rows[-1]["elapsed_seconds"]) - float(rows[0]["elapsed_seconds"])
    return seconds, sum(int(float(r["learner_turns"])) for r in rows[1:])


def run_mode(mode: str, seed: int, args: argparse.Namespace, out: Path) -> dict:
    prefix, sets = MODES[mode]
    name = f"{mode}-seed{seed}"
    command = [*prefix, sys.executable, __file__, "--child", "--seed", str(seed)]
    command += ["--out", str(out), "--name", name]
    if args.iterations:
        command += ["--iterations", str(args.iterations)]
    for item in [*sets, *args.set]:
        command += ["--set", item]
    env = {**os.environ, "SELFPLAY_PLOTS": "0"}
    if mode.startswith("inprocess"):
        env["OMP_NUM_THREADS"] = sets[0].split("=")[1]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode or not lines:
        raise SystemExit(f"{name} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    seconds, completions = timed(out / name)
    return {
        "mode": mode,
        "seed": seed,
        "seconds": seconds,
        "completions": completions,
        "rate": completions / seconds,
        "wall": time.perf_counter() - started,
        "after": json.loads(lines[-1][len("RESULT ") :]),
    }


def closing(after: dict) -> str:
    """A run's closing table on one line, as RESULTS.md writes it: ``random: win 0.59 [0.49,
    0.68] non-loss 0.84 [0.76, 0.90]  minimax: ...``."""

    def interval(pair: list[float]) -> str:
        return f"[{pair[0]:.2f}, {pair[1]:.2f}]"

    return "  ".join(
        f"{name}: win {a['win_rate']:.2f} {interval(a['win_interval'])} non-loss "
        f"{a['non_loss_rate']:.2f} {interval(a['non_loss_interval'])}"
        for name, a in after.items()
    )


def inside(served: dict, local: dict) -> str:
    """Whether the served run's rates fall inside the in-process run's intervals."""
    checks = []
    for name, theirs in local.items():
        mine = served[name]
        for key in ("win", "non_loss"):
            low, high = theirs[f"{key}_interval"]
            checks.append(low <= mine[f"{key}_rate"] <= high)
    return "inside" if all(checks) else "OUTSIDE"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, nargs="+")
    parser.add_argument("--iterations", type=int, help="default: the recipe's (40)")
    parser.add_argument("--modes", default="inprocess-1,inprocess-2,served-1+1,sync-1+1")
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--table", action="store_true", help="print the closing tables")
    parser.add_argument("--keep", type=Path, help="keep the run folders here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if shutil.which("taskset") is None and "inprocess-1" in args.modes:
        raise SystemExit("inprocess-1 pins with taskset (util-linux); install it or drop it.")
    out = args.keep or Path(tempfile.mkdtemp(prefix="served-rollouts-"))
    modes = [m for m in args.modes.split(",") if m]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; modes {modes}")
    print(f"{'mode':<12}{'seed':>5}{'seconds':>9}{'compl':>7}{'compl/s':>9}")
    results: dict[tuple[str, int], dict] = {}
    for seed in args.seeds or [args.seed]:
        for mode in modes:
            r = results[mode, seed] = run_mode(mode, seed, args, out)
            print(f"{mode:<12}{seed:>5}{r['seconds']:>9.1f}{r['completions']:>7}{r['rate']:>9.2f}")
        for top, base in (("served-1+1", "inprocess-1"), ("served-1+1", "inprocess-2")):
            if (top, seed) in results and (base, seed) in results:
                ratio = results[top, seed]["rate"] / results[base, seed]["rate"]
                print(f"seed {seed}: {top} / {base} = {ratio:.2f}")
        if args.table:
            for mode in modes:
                print(f"  {mode:<12} {closing(results[mode, seed]['after'])}")
            for top, base in (("served-1+1", "inprocess-2"), ("served-1+1", "inprocess-1")):
                if (top, seed) in results and (base, seed) in results:
                    verdict = inside(results[top, seed]["after"], results[base, seed]["after"])
                    print(f"  seed {seed}: {top} {verdict} {base}'s intervals")
    print(f"run folders: {out}")


if __name__ == "__main__":
    main()
