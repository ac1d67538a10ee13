"""Seed 004's two options, measured: Elo ratings for the difficulty band, and noise injection.

    python benchmarks/seed004.py elo --seeds 0 1 2
    python benchmarks/seed004.py noise --seeds 0 1 2 --out DIR        # runs, then the table
    python benchmarks/seed004.py noise --seeds 0 1 2 --out DIR --collect

``elo``: the task schedule of proposer-solver-judge (its band controller: x1.2 above a 70%
solver win rate, x0.8 below 30%) against a scripted solver of known skill, which solves a
task of difficulty d with probability 1 / (1 + (d / skill)^3), so it wins 30-70% for d
between 0.75 and 1.33 times its skill. For each signal the band reads (the last iteration's
raw win rate, or the solver's expected score from the proposer's and solver's Elo ratings)
it reports, over 60 iterations: the first iteration at which the true win rate is in the
band, the share of iterations 21-60 in it, and how often the difficulty changed there. No
model is involved: it isolates what the controller does with a noisy signal.

``noise``: math-solver on one-digit sums with the tiny model: a cold start on the bank's
worked solutions, then two iterations of STaR-style imitation (``sft``, answers the verifier
passed), with ``game_options.noise`` 0 or 0.5 (the share of problems shown with an
irrelevant sentence inserted; cold-start transcripts are drawn from the same matches), and
the held-out sums measured clean (``held_out``) and with noise (``noisy``) before and after
(each run's summary.json).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

NOISE = [
    "--game", "math-solver", "--iterations", "2", "--matches", "32", "--cold-start", "200",
    "--objective", "sft",
    "--set", "game_options.topics=[sums]", "--set", "game_options.levels=[1,2]",
    "--set", "game_options.source=generated", "--set", "game_options.noise_eval=true",
    "--set", "cold_start.players=[solution]", "--set", "generation.max_new_tokens=24",
    "--set", "objective_options.keep=pass", "--set", "train.lr=3e-5",
    "--set", "eval.matches=100", "--set", "threads=1", "--set", "checkpoint_every=1000",
]  # fmt: skip
SHARES = (0.0, 0.5)


def elo(seeds: list[int], skills: tuple[float, ...] = (0.8, 2.0, 3.5), matches: int = 16) -> None:
    from selfplay.games.banks import load_bank
    from selfplay.games.proposers.task_schedule import TaskSchedule

    def wins(d: float, skill: float) -> float:
        return 1.0 / (1.0 + (d / skill) ** 3)

    print(f"scripted solver, {matches} decided matches per iteration, 60 iterations")
    print("signal     skill seed  first-in-band  in-band(21-60)  changes(21-60)")
    summary: dict[str, list[tuple[float, float]]] = {}
    for signal in ("win_rate", "elo"):
        for skill in skills:
            for seed in seeds:
                schedule = TaskSchedule(
                    load_bank("arithmetic", "train"), inject_every=0, signal=signal,
                    max_difficulty=10.0,
                )  # fmt: skip
                rng = random.Random(f"{seed}-{skill}")
                first, inside, changes, last = None, 0, 0, schedule.difficulty
                for it in range(1, 61):
                    p = wins(schedule.difficulty, skill)
                    verdicts = ["pass" if rng.random() < p else "fail" for _ in range(matches)]
                    episodes = [
                        SimpleNamespace(state={"final": "x", "level": 1, "verdict": v})
                        for v in verdicts
                    ]
                    schedule.after_iteration(it, episodes)
                    now = wins(schedule.difficulty, skill)
                    if first is None and 0.3 <= now <= 0.7:
                        first = it
                    if it > 20:
                        inside += 0.3 <= now <= 0.7
                        changes += schedule.difficulty != last
                    last = schedule.difficulty
                share = inside / 40
                summary.setdefault(signal, []).append((share, changes))
                print(
                    f"{signal:9}  {skill:5}  {seed:4}  {first!s:>13}  {share:14.2f}  {changes:14}"
                )
    for signal, rows in summary.items():
        shares, changes = [r[0] for r in rows], [r[1] for r in rows]
        print(
            f"{signal}: in band {statistics.mean(shares):.2f} (min {min(shares):.2f}, max "
            f"{max(shares):.2f}); difficulty changes {statistics.mean(changes):.1f} of 40 "
            f"(min {min(changes)}, max {max(changes)})"
        )


def noise(seeds: list[int], out: Path, collect: bool, shares: tuple[float, ...] = SHARES) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if not collect:
        for seed in seeds:
            for share in shares:
                name = f"noise{share}-seed{seed}"
                if (out / name / "summary.json").exists():
                    continue
                command = ["selfplay", "run", *NOISE, "--seed", str(seed), "--out", str(out)]
                command += ["--name", name, "--set", f"game_options.noise={share}"]
                print(" ".join(command), flush=True)
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    print("noise  seed  held_out before -> after  noisy before -> after")
    table: dict[float, list[list[float]]] = {}
    for share in SHARES:
        for seed in seeds:
            path = out / f"noise{share}-seed{seed}" / "summary.json"
            if not path.exists():
                continue
            data = json.loads(path.read_text())
            before, after = data["tasks_before"], data["tasks_after"]
            cells = [
                side[f"eval/{split}/accuracy"]
                for split in ("held_out", "noisy")
                for side in (before, after)
            ]
            table.setdefault(share, []).append(cells)
            shown = [f"{cells[0]:.3f} -> {cells[1]:.3f}", f"{cells[2]:.3f} -> {cells[3]:.3f}"]
            print(f"{share:5}  {seed:4}  {shown[0]}  {shown[1]}")
    for share, rows in table.items():
        means = [statistics.mean(column) for column in zip(*rows, strict=True)]
        spans = [(min(c), max(c)) for c in zip(*rows, strict=True)]
        print(
            f"noise {share}: held_out {means[0]:.3f} -> {means[1]:.3f} "
            f"({spans[1][0]:.3f}-{spans[1][1]:.3f}), noisy {means[2]:.3f} -> {means[3]:.3f} "
            f"({spans[3][0]:.3f}-{spans[3][1]:.3f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["elo", "noise"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("runs/seed004"))
    parser.add_argument("--collect", action="store_true", help="tabulate finished runs only")
    parser.add_argument(
        "--matches", type=int, default=16, help="elo: decided matches per iteration"
    )
    parser.add_argument("--shares", type=float, nargs="+", default=list(SHARES), help="noise arms")
    args = parser.parse_args()
    if args.what == "elo":
        elo(args.seeds, matches=args.matches)
    else:
        noise(args.seeds, args.out, args.collect, tuple(args.shares))


if __name__ == "__main__":
    sys.exit(main())
