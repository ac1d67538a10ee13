"""Speed ledger: HEAD against a named commit on the race and on the default run, alternated:
their seconds and their peak memory.

Run it before landing any change to core/ that is not only docs, and record the figure in
benchmarks/RESULTS.md when a time moves more than 3% or a peak more than 5%:

    python benchmarks/speed_ledger.py --against COMMIT [--rounds 2] [--threads 2]

Each commit is checked out in a git worktree of its own and imported from there
(benchmarks/checkouts.py; each child process checks which copy it imported). Both commits
run the same invocation from the same harness, HEAD's (``--own-harness``: each commit's own
benchmarks/peer_trl.py, for a commit whose code HEAD's harness no longer fits), alternated
round by round (HEAD first in odd rounds, the commit first in even ones):

- the race: ``benchmarks/peer_trl.py``'s ``ours`` side (one-digit addition, the random-init
  tiny GPT-2 built once for both, 32 prompts x 8 completions, 30 steps);
- the default run: ``selfplay run --iterations 1`` with every other setting the default (the
  tic-tac-toe recipe, the tiny model and its 300-step cold start, 128 matches, the closing
  evaluations): the iteration's seconds (its matches and its update, from metrics.csv) and
  the command's wall-clock seconds. The cold start is kept: a model without it plays
  invalid moves that end its matches early, so the iteration would not be the one a run
  repeats forty times; it also puts the cold start and the evaluations, core code both,
  under the ledger.

Beside each child's seconds, its peak resident memory (the kernel's ``ru_maxrss`` of the
race's side and of the run's command, read from outside): memory is watched like speed, since
a change that leaves the seconds alone can still double a peak (prompts read once let a
micro-batch hold 192 rows of a 50k vocabulary's logits: 1.6 GB against 0.9 GB).

It prints every round, then per measure the medians and the commit's figure over HEAD's
(above 1, HEAD is faster or leaner), and exits 1 when HEAD is more than ``--threshold`` (3%)
slower on the race, the iteration or the run, or when either child's peak is more than
``--memory-threshold`` (5%) above the commit's. The rounds' spread is printed beside them:
on a shared machine a 3% move in seconds is within the noise, so rerun on a quiet one before
recording it; a peak does not move with the load, so a rise is the code's. Each child's CPU
time (user + system) is shown too, never gated: it moves far less with the load than the
wall clock does (with ``--threads 1``; two threads spin while they wait for each other).
Uncommitted changes are not measured.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkouts import (  # beside; pretrained_iteration.py imports them from here
    Checkout,
    LedgerError,
    check_import,
    checkouts,
    child,
    environment,
    git,
    resolve,
)

ROOT = Path(__file__).resolve().parents[1]
THRESHOLD = 0.03
MEMORY_THRESHOLD = 0.05


@dataclass(frozen=True)
class Measure:
    key: str
    label: str
    column: str  # its heading in the table of rounds
    source: str  # "race" or "run": the child that measures it
    gated: bool  # HEAD worse than the threshold on it fails the ledger
    memory: bool = False  # a peak in MB, under the memory threshold; else seconds


MEASURES = (
    Measure("race", "race, 30 steps (s)", "race", "race", True),
    Measure("race_generation", "  its generation (s)", "gen", "race", False),
    Measure("race_update", "  its update (s)", "upd", "race", False),
    Measure("race_cpu", "  its process's CPU time (s)", "cpu", "race", False),
    Measure("race_peak", "  its peak memory (MB)", "MB", "race", True, memory=True),
    Measure("iteration", "default run, iteration (s)", "iter", "run", True),
    Measure("iteration_rollout", "  its matches (s)", "matches", "run", False),
    Measure("iteration_update", "  its update (s)", "upd", "run", False),
    Measure("run", "default run, whole command (s)", "command", "run", True),
    Measure("run_cpu", "  its process's CPU time (s)", "cpu", "run", False),
    Measure("run_peak", "  its peak memory (MB)", "MB", "run", True, memory=True),
)


# ---- one measurement of each kind ----------------------------------------------------------


def build_race_model(harness: Path, folder: Path, env: dict[str, str]) -> None:
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "import peer_trl; peer_trl.build_model(Path(sys.argv[2]), 0)"
    )
    child([sys.executable, "-c", code, str(harness.parent), str(folder)], env, "the race model")


def race_once(harness: Path, model: Path, threads: int, env: dict[str, str]) -> dict[str, float]:
    """The race's ``ours`` side, the same child process peer_trl.py itself starts."""
    command = [sys.executable, str(harness), "--side", "ours", "--model", str(model),
               "--steps", "30", "--threads", str(threads), "--precision", "32-true",
               "--seed", "0"]  # fmt: skip
    done = child(command, env, "the race's ours side")
    lines = [line for line in done.out.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise LedgerError(f"the race's ours side printed no RESULT line:\n{done.out[-2000:]}")
    result = json.loads(lines[-1][len("RESULT ") :])
    return {
        "race": result["seconds"],
        "race_generation": result["generation_seconds"],
        "race_update": result["update_seconds"],
        "race_cpu": done.cpu,
        "race_peak": done.peak_mb,
    }


def run_once(out: Path, threads: int, env: dict[str, str]) -> dict[str, float]:
    """``selfplay run --iterations 1``, defaults otherwise, in a fresh folder ``out``."""
    command = [sys.executable, "-m", "selfplay.core.commands.cli", "run", "--iterations", "1",
               "--seed", "0", "--out", str(out.parent), "--name", out.name,
               "--set", f"threads={threads}"]  # fmt: skip
    start = time.perf_counter()
    done = child(command, env, "the default run", cwd=out.parent)
    wall = time.perf_counter() - start
    with open(out / "metrics.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rollout = sum(float(row["rollout_seconds"]) for row in rows) / len(rows)
    update = sum(float(row["update_seconds"]) for row in rows) / len(rows)
    return {
        "iteration": rollout + update,
        "iteration_rollout": rollout,
        "iteration_update": update,
        "run": wall,
        "run_cpu": done.cpu,
        "run_peak": done.peak_mb,
    }


# ---- the arithmetic ------------------------------------------------------------------------


def schedule(labels: tuple[str, str], rounds: int) -> list[tuple[int, str]]:
    """(round, label) in running order: the first label first in odd rounds, last in even."""
    order: list[tuple[int, str]] = []
    for r in range(1, rounds + 1):
        pair = labels if r % 2 else labels[::-1]
        order += [(r, label) for label in pair]
    return order


@dataclass(frozen=True)
class Compared:
    measure: Measure
    head: float  # median seconds, or MB
    against: float
    ratio: float  # the commit's figure over HEAD's: above 1, HEAD is faster or leaner
    rounds: tuple[float, ...]  # the same ratio round by round
    worse: bool  # HEAD more than the measure's threshold slower, or its peak higher
    moved: bool  # more than the threshold either way: worth a line in RESULTS.md


def compare(
    head: dict[str, list[float]],
    against: dict[str, list[float]],
    threshold: float = THRESHOLD,
    memory_threshold: float = MEMORY_THRESHOLD,
) -> list[Compared]:
    """Per measure, medians over the rounds and the commit's figure over HEAD's."""
    out = []
    for measure in MEASURES:
        mine, theirs = head.get(measure.key), against.get(measure.key)
        if not mine or not theirs:
            continue
        a, b = statistics.median(mine), statistics.median(theirs)
        ratio = b / a if a > 0 else float("inf")
        rounds = tuple(y / x if x > 0 else float("inf") for x, y in zip(mine, theirs, strict=True))
        limit = memory_threshold if measure.memory else threshold
        worse = a > b * (1 + limit)
        moved = worse or b > a * (1 + limit)
        out.append(Compared(measure, a, b, ratio, rounds, worse, moved))
    return out


def verdict(
    rows: list[Compared], against: str, threshold: float, memory_threshold: float = MEMORY_THRESHOLD
) -> tuple[int, str]:
    """The exit status and the closing lines: one for the seconds, one for the peaks."""
    gated = [row for row in rows if row.measure.gated]
    times = [row for row in gated if not row.measure.memory]
    peaks = [row for row in gated if row.measure.memory]
    lines = [_seconds_line(times, against, f"{threshold:.0%}")] if times else []
    lines += [_memory_line(peaks, against, f"{memory_threshold:.0%}")] if peaks else []
    return int(any(row.worse for row in gated)), "\n".join(lines)


def _seconds_line(rows: list[Compared], against: str, percent: str) -> str:
    slow = [row for row in rows if row.worse]
    if slow:
        names = ", ".join(f"{row.measure.key} {row.ratio:.3f}x" for row in slow)
        return (
            f"HEAD is more than {percent} slower than {against}: {names}. Find the cause, or "
            "rerun on a quiet machine and record the move in benchmarks/RESULTS.md."
        )
    moved = [row for row in rows if row.moved]
    if moved:
        names = ", ".join(f"{row.measure.key} {row.ratio:.3f}x" for row in moved)
        return f"HEAD is more than {percent} faster than {against}: {names}; record it."
    return f"HEAD is within {percent} of {against} on the race, the iteration and the run."


def _memory_line(rows: list[Compared], against: str, percent: str) -> str:
    def named(chosen: list[Compared]) -> str:
        return ", ".join(
            f"{row.measure.key} {row.head:.0f} MB against {row.against:.0f} MB "
            f"({row.head / row.against - 1:+.1%})"
            for row in chosen
        )

    higher = [row for row in rows if row.worse]
    if higher:
        return (
            f"HEAD's peak memory is more than {percent} above {against}'s: {named(higher)}. "
            "A peak does not move with the load: find what holds the memory."
        )
    lower = [row for row in rows if row.moved]
    if lower:
        return f"HEAD's peak memory is more than {percent} below {against}'s: {named(lower)}."
    return f"HEAD's peak memory is within {percent} of {against}'s on the race and the run."


# ---- the command ---------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the commit HEAD is measured against")
    parser.add_argument("--head", default="HEAD", help="the commit measured (default HEAD)")
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds (default 2)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="default 0.03")
    parser.add_argument(
        "--memory-threshold", type=float, default=MEMORY_THRESHOLD, help="peaks; default 0.05"
    )
    parser.add_argument("--only", choices=["race", "run"], help="one of the two measures only")
    parser.add_argument(
        "--own-harness", action="store_true", help="each commit's own peer_trl.py, not HEAD's"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more (2 or more to alternate)")
    if args.threads < 1:
        parser.error(f"--threads {args.threads}: give 1 or more")
    for flag, value, example in (
        ("--threshold", args.threshold, "0.03 for 3%"),
        ("--memory-threshold", args.memory_threshold, "0.05 for 5%"),
    ):
        if not 0 <= value < 1:
            parser.error(f"{flag} {value}: give a fraction, e.g. {example}")
    return args


def measure_round(
    checkout: Checkout, args: argparse.Namespace, harness: Path, model: Path, runs: Path, r: int
) -> dict[str, float]:
    env = environment(checkout, args.threads)
    figures: dict[str, float] = {}
    if args.only != "run":
        figures |= race_once(harness, model, args.threads, env)
    if args.only != "race":
        figures |= run_once(runs / f"{checkout.folder.name}-round-{r}", args.threads, env)
    return figures


def report(args: argparse.Namespace, checkouts_: list[Checkout], where: Path) -> int:
    head, against = checkouts_
    harnesses = {c.label: c.folder / "benchmarks" / "peer_trl.py" for c in checkouts_}
    if not args.own_harness:
        harnesses = dict.fromkeys(harnesses, harnesses[head.label])
    for checkout in checkouts_:
        check_import(checkout, environment(checkout, args.threads))
    model, runs = where / "race-model", where / "runs"
    runs.mkdir()
    if args.only != "run":
        build_race_model(harnesses[head.label], model, environment(head, args.threads))
    by_label = {c.label: c for c in checkouts_}
    figures: dict[str, dict[str, list[float]]] = {c.label: {} for c in checkouts_}
    shown = [m for m in MEASURES if args.only in (None, m.source)]
    print("round  commit    " + "".join(f"{m.column:>9}" for m in shown) + "   (seconds, MB)")
    for r, label in schedule((head.label, against.label), args.rounds):
        got = measure_round(by_label[label], args, harnesses[label], model, runs, r)
        for key, value in got.items():
            figures[label].setdefault(key, []).append(value)
        cells = "".join(f"{got[m.key]:>9.1f}" for m in shown if m.key in got)
        print(f"{r:>5}  {label[:8]:<8}  {cells}", flush=True)
    limits = (args.threshold, args.memory_threshold)
    rows = compare(figures[head.label], figures[against.label], *limits)
    print(f"\n{'measure':<32}{'HEAD':>9}{against.label[:9]:>10}{'commit/HEAD':>12}  per round")
    for row in rows:
        flag = ("  <- more memory" if row.measure.memory else "  <- slower") if row.worse else ""
        per = ", ".join(f"{x:.3f}" for x in row.rounds)
        print(
            f"{row.measure.label:<32}{row.head:>9.2f}{row.against:>10.2f}{row.ratio:>11.3f}x"
            f"  {per}{flag}"
        )
    status, line = verdict(rows, against.label, *limits)
    print(f"load average after: {os.getloadavg()[0]:.2f}\n{line}")
    return status


def stop_on_term(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through the worktrees' cleanup


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    signal.signal(signal.SIGTERM, stop_on_term)
    if args.against == args.head:
        print(
            f"--against {args.against} names the commit measured; to measure the noise, "
            "name the same commit another way (its hash).",
            file=sys.stderr,
        )
        return 2
    try:
        commits = {args.head: resolve(ROOT, args.head), args.against: resolve(ROOT, args.against)}
    except LedgerError as err:
        print(err, file=sys.stderr)
        return 2
    if len(set(commits.values())) == 1:
        print("note: both name the same commit; the ratios measure the noise.")
    if git(ROOT, "status", "--porcelain", "--untracked-files=no"):
        print("note: uncommitted changes are not measured; the ledger measures commits.")
    head, against = (commit[:9] for commit in commits.values())
    print(
        f"speed ledger: {args.head} ({head}) against {args.against} ({against}), "
        f"{args.rounds} round(s) alternated, {args.threads} threads; load average before: "
        f"{os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="speed-ledger-") as temp:
        try:
            with checkouts(ROOT, commits, Path(temp)) as made:
                return report(args, made, Path(temp))
        except LedgerError as err:
            print(err, file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
