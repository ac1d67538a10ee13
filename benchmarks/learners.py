"""Several learners against one shared policy (docs/learners.md): what a learner per seat
learns, and what it costs.

    python benchmarks/learners.py tictactoe --seeds 0 1 2 --out DIR
        The default tic-tac-toe run (its recipe, 20 iterations of 128 matches), once with one
        shared policy and once with a learner per seat (--learner player_0 --learner
        player_1: two models of the same size, each cold-started on its own seat's
        transcripts, each facing the other's newest weights). Both runs play the same number
        of matches, so the same turns are trained (the shared policy all of them, each learner
        its own seat's). Then each policy is measured greedily in each seat against minimax
        and random, --matches matches a seat: the learner of a seat in its seat, the shared
        policy in the same seat.

    python benchmarks/learners.py math --seeds 0 1 2 --out DIR
        math-proposer-solver on one-digit sums with a proposer of 2 layers and a solver of 4
        (tiny), each cold-started on its own role's turns of the `solution` player (the bank's
        problems and answers): the solver's held-out accuracy after the cold start and after
        every iteration, and the proposer's valid-proposal rate per iteration.

    python benchmarks/learners.py cost --iterations 3 --repeats 2 --out DIR
        One shared policy and two learners (tic-tac-toe, same settings), in turn: seconds per
        iteration (median over the iterations after the first) and peak resident memory of
        the whole process (its ru_maxrss), each run in a fresh process.

Every run prints its command; results go to DIR/*.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

TWO = ["--learner", "player_0", "--learner", "player_1"]


def selfplay(args: list[str], threads: int = 1) -> dict[str, float]:
    """Run ``selfplay ARGS`` in a fresh process; its wall time and peak RSS (MB)."""
    code = (
        "import resource, sys\n"
        "from selfplay.core.commands.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(f'PEAK_MB {peak:.1f}', file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    full = [*args, "--set", f"threads={threads}"]
    print("selfplay " + " ".join(full), flush=True)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *full], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    peak = next(
        float(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK_MB")
    )
    return {"seconds": time.perf_counter() - started, "peak_mb": peak}


def metrics(folder: Path) -> list[dict[str, str]]:
    with (folder / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


def seat_rates(folder: Path, learner: str | None, role: str, matches: int) -> dict[str, float]:
    """Greedy non-loss and win rates of a run's policy in ``role`` against each scripted player."""
    from selfplay.core.commands.play import load_checkpoint_policy
    from selfplay.core.evaluate import evaluate
    from selfplay.core.plan.build import build_game

    loaded = load_checkpoint_policy(folder, learner)
    game = build_game(loaded.config)
    results = evaluate(game, loaded.policy, matches=matches, seed=12345, roles=[role])
    return {
        f"{name}/{key}": getattr(result, key)
        for name, result in results.items()
        for key in ("non_loss_rate", "win_rate")
    }


def tictactoe(args: argparse.Namespace) -> None:
    rows = []
    for seed in args.seeds:
        for kind, extra in (("shared", []), ("learners", TWO)):
            name = f"{kind}-{seed}"
            folder = args.out / name
            if not (folder / "summary.json").exists():
                run = ["run", "--seed", str(seed), "--out", str(args.out), "--name", name, *extra]
                selfplay([*run, "--iterations", str(args.iterations)], args.threads)
            for role in ("player_0", "player_1"):
                learner = role if kind == "learners" else None
                rates = seat_rates(folder, learner, role, args.matches)
                rows.append({"seed": seed, "kind": kind, "role": role, **rates})
                print(json.dumps(rows[-1]), flush=True)
    (args.out / "tictactoe.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n| seat | policy | " + " | ".join(f"seed {s}" for s in args.seeds) + " | mean |")
    print("|---|---|" + "---|" * (len(args.seeds) + 1))
    for opponent in ("minimax", "random"):
        key = "non_loss_rate" if opponent == "minimax" else "win_rate"
        for role in ("player_0", "player_1"):
            for kind in ("shared", "learners"):
                found = [r for r in rows if r["role"] == role and r["kind"] == kind]
                values = [r[f"{opponent}/{key}"] for r in found]
                cells = " | ".join(f"{v:.2f}" for v in values)
                mean = statistics.mean(values)
                print(f"| {role} vs {opponent} ({key}) | {kind} | {cells} | {mean:.2f} |")


def math_run(seed: int, args: argparse.Namespace) -> list[str]:
    """The `selfplay` arguments of one seed's math run."""
    run = [
        "run", "--game", "math-proposer-solver", "--seed", str(seed), "--out", str(args.out),
        "--name", f"math-{seed}", "--iterations", str(args.iterations),
        "--matches", str(args.matches), "--learner", "proposer", "--learner", "solver",
        "--set", "learners.proposer.model_options={layers: 2}",
        "--set", "generation.max_new_tokens=48", "--set", "eval.matches=50",
        "--set", "game_options.topics=[sums]", "--set", "cold_start.players=[solution]",
        "--set", f"cold_start.steps={args.cold_start}",
        "--set", "checkpoint_every=1000", "--eval-every", "1",
    ]  # fmt: skip
    return run + [part for setting in args.set for part in ("--set", setting)]


def math(args: argparse.Namespace) -> None:
    rows = []
    for seed in args.seeds:
        folder = args.out / f"math-{seed}"
        if not (folder / "summary.json").exists():
            selfplay(math_run(seed, args), args.threads)
        summary = json.loads((folder / "summary.json").read_text())
        table = metrics(folder)
        row = {
            "seed": seed,
            "held_out_before": summary["tasks_before"].get("eval/held_out/accuracy"),
            "held_out_after": summary["tasks_after"].get("eval/held_out/accuracy"),
            "held_out_by_iteration": [float(r.get("eval/held_out/accuracy") or 0) for r in table],
            **proposals(folder),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    table = args.out / "math.json"  # seeds run as separate processes share it
    kept = json.loads(table.read_text()) if table.exists() else []
    rows = sorted([r for r in kept if r["seed"] not in args.seeds] + rows, key=lambda r: r["seed"])
    table.write_text(json.dumps(rows, indent=2) + "\n")


def proposals(folder: Path) -> dict[str, list[float]]:
    """Per iteration: the share of matches whose proposal was read (a problem and an answer in
    the asked form), the share that was valid (the game's `valid_problem` signal: right where
    the game works it out, solved again by the proposer where it checks), the share the game
    found wrong, ill-posed or unreadable (game_options.compute_answers), and the share the
    solver was scored on (under solver_reference=game, wrong proposals it worked out too)."""
    read: dict[int, list[int]] = {}
    with (folder / "episodes.jsonl").open() as f:
        for line in f:
            episode = json.loads(line)
            state = episode["state"]
            counts = read.setdefault(episode["record"]["iteration"], [0, 0, 0, 0, 0])
            counts[0] += 1
            counts[1] += state.get("problem") is not None
            counts[2] += episode["signals"].get("valid_problem", 0.0) == 1.0
            counts[3] += state.get("stated") in ("fail", "ill-posed", "unreadable")
            counts[4] += state.get("verdict") is not None and state.get("void") is None
    ordered = [read[i] for i in sorted(read)]
    return {
        "proposal_read_by_iteration": [c[1] / c[0] for c in ordered],
        "proposal_valid_by_iteration": [c[2] / c[0] for c in ordered],
        "proposal_wrong_answer_by_iteration": [c[3] / c[0] for c in ordered],
        "solver_scored_by_iteration": [c[4] / c[0] for c in ordered],
    }


def cost(args: argparse.Namespace) -> None:
    base = [
        "run", "--iterations", str(args.iterations), "--matches", "64", "--cold-start", "50",
        "--set", "eval.matches=20", "--set", "checkpoint_every=1000", "--seed", "0",
    ]  # fmt: skip
    found: dict[str, list[dict[str, float]]] = {"shared": [], "learners": []}
    for repeat in range(args.repeats):
        for kind, extra in (("shared", []), ("learners", TWO)):
            name = f"cost-{kind}-{repeat}"
            measured = selfplay([*base, "--out", str(args.out), "--name", name, *extra], 2)
            table = metrics(args.out / name)[1:]  # the first iteration warms up
            seconds = [float(r["rollout_seconds"]) + float(r["update_seconds"]) for r in table]
            measured["iteration_seconds"] = statistics.median(seconds)
            found[kind].append(measured)
            print(kind, json.dumps(measured), flush=True)
    (args.out / "cost.json").write_text(json.dumps(found, indent=2) + "\n")
    for key in ("iteration_seconds", "peak_mb"):
        ratios = [b[key] / a[key] for a, b in zip(found["shared"], found["learners"], strict=True)]
        print(f"{key}: learners / shared = " + ", ".join(f"{r:.2f}" for r in ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["tictactoe", "math", "cost"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--matches", type=int, default=None)
    parser.add_argument("--cold-start", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], help="math: a KEY=VALUE more")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    defaults = {"tictactoe": (20, 200), "math": (6, 32), "cost": (3, 0)}[args.what]
    args.iterations = args.iterations or defaults[0]
    args.matches = args.matches or defaults[1]
    {"tictactoe": tictactoe, "math": math, "cost": cost}[args.what](args)


if __name__ == "__main__":
    main()
