"""Speed ledger: HEAD against a named commit on the race and on the default run, alternated.

Run it before landing any change to core/ that is not only docs, and record the figure in
benchmarks/RESULTS.md when a measure moves more than 3%:

    python benchmarks/speed_ledger.py --against COMMIT [--rounds 2] [--threads 2]

Each commit is checked out in a git worktree of its own (removed at the end, also after an
error or Ctrl-C) and imported from there: the repository root is the ``selfplay`` package, so
a temporary folder holds a ``selfplay`` link to the worktree and goes first on PYTHONPATH
(ahead of any installed copy; each child process checks which one it imported). Both commits
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

It prints every round, then per measure the medians and HEAD's speed against the commit
(the commit's seconds over HEAD's: above 1, HEAD is faster), and exits 1 when HEAD is more
than ``--threshold`` (3%) slower on the race, the iteration or the run. The rounds' spread is
printed beside them: on a shared machine a 3% move is within the noise, so rerun on a quiet
one before recording it. Each child's CPU time (user + system) is shown too, never gated:
it moves far less with the load than the wall clock does (with ``--threads 1``; two threads
spin while they wait for each other). Uncommitted changes are not measured.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THRESHOLD = 0.03


@dataclass(frozen=True)
class Measure:
    key: str
    label: str
    column: str  # its heading in the table of rounds
    source: str  # "race" or "run": the child that measures it
    gated: bool  # HEAD slower than the threshold on it fails the ledger


MEASURES = (
    Measure("race", "race, 30 steps (s)", "race", "race", True),
    Measure("race_generation", "  its generation (s)", "gen", "race", False),
    Measure("race_update", "  its update (s)", "upd", "race", False),
    Measure("race_cpu", "  its process's CPU time (s)", "cpu", "race", False),
    Measure("iteration", "default run, iteration (s)", "iter", "run", True),
    Measure("iteration_rollout", "  its matches (s)", "matches", "run", False),
    Measure("iteration_update", "  its update (s)", "upd", "run", False),
    Measure("run", "default run, whole command (s)", "command", "run", True),
    Measure("run_cpu", "  its process's CPU time (s)", "cpu", "run", False),
)


class LedgerError(Exception):
    """A commit, a worktree or a measuring child that failed; the message says which."""


# ---- the commits and their worktrees -------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode:
        raise LedgerError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def resolve(repo: Path, name: str) -> str:
    """The full hash of commit ``name``, or a `LedgerError` naming it."""
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
    except LedgerError:
        raise LedgerError(
            f"{name!r} is not a commit of {repo.name}; name one `git log --oneline` shows."
        ) from None


@dataclass(frozen=True)
class Checkout:
    label: str  # "HEAD" or the commit as given
    commit: str
    folder: Path  # the worktree
    path: Path  # the PYTHONPATH entry: a folder with a ``selfplay`` link to the worktree


@contextmanager
def checkouts(repo: Path, commits: dict[str, str], where: Path) -> Iterator[list[Checkout]]:
    """A detached worktree per commit under ``where``, each importable as ``selfplay``;
    every worktree is removed on the way out, whatever happened inside."""
    made: list[Checkout] = []
    try:
        for k, (label, commit) in enumerate(commits.items()):
            folder, path = where / f"tree-{k}", where / f"path-{k}"
            git(repo, "worktree", "add", "--detach", "--quiet", str(folder), commit)
            made.append(Checkout(label, commit, folder, path))
            path.mkdir()
            (path / "selfplay").symlink_to(folder, target_is_directory=True)
        yield made
    finally:
        for checkout in made:
            with suppress(LedgerError):  # already gone: prune below forgets it
                git(repo, "worktree", "remove", "--force", str(checkout.folder))
        git(repo, "worktree", "prune")


def environment(checkout: Checkout, threads: int) -> dict[str, str]:
    rest = os.environ.get("PYTHONPATH")
    path = str(checkout.path) + (os.pathsep + rest if rest else "")
    return {
        **os.environ,
        "PYTHONPATH": path,
        "OMP_NUM_THREADS": str(threads),
        "SELFPLAY_PLOTS": "0",
    }


def child(command: list[str], env: dict[str, str], what: str, cwd: Path | None = None) -> str:
    """Run a measuring child; its stdout, or a `LedgerError` with the tail of its stderr."""
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode:
        raise LedgerError(f"{what} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def children_cpu() -> float:
    """CPU seconds (user + system) of every child process waited for so far."""
    times = os.times()
    return times.children_user + times.children_system


def check_import(checkout: Checkout, env: dict[str, str]) -> None:
    """That ``import selfplay`` under ``env`` is the worktree's, not an installed copy."""
    out = child([sys.executable, "-c", "import selfplay; print(selfplay.__file__)"], env, "import")
    found = Path(out.strip()).resolve().parent
    if found != checkout.folder.resolve():
        raise LedgerError(
            f"{checkout.label}: `import selfplay` found {found}, not the worktree "
            f"{checkout.folder}; unset whatever puts another copy ahead on sys.path."
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
    cpu = children_cpu()
    out = child(command, env, "the race's ours side")
    cpu = children_cpu() - cpu
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise LedgerError(f"the race's ours side printed no RESULT line:\n{out[-2000:]}")
    result = json.loads(lines[-1][len("RESULT ") :])
    return {
        "race": result["seconds"],
        "race_generation": result["generation_seconds"],
        "race_update": result["update_seconds"],
        "race_cpu": cpu,
    }


def run_once(out: Path, threads: int, env: dict[str, str]) -> dict[str, float]:
    """``selfplay run --iterations 1``, defaults otherwise, in a fresh folder ``out``."""
    command = [sys.executable, "-m", "selfplay.core.commands.cli", "run", "--iterations", "1",
               "--seed", "0", "--out", str(out.parent), "--name", out.name,
               "--set", f"threads={threads}"]  # fmt: skip
    start, cpu = time.perf_counter(), children_cpu()
    child(command, env, "the default run", cwd=out.parent)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    with open(out / "metrics.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rollout = sum(float(row["rollout_seconds"]) for row in rows) / len(rows)
    update = sum(float(row["update_seconds"]) for row in rows) / len(rows)
    return {
        "iteration": rollout + update,
        "iteration_rollout": rollout,
        "iteration_update": update,
        "run": wall,
        "run_cpu": cpu,
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
    head: float  # median seconds
    against: float
    speed: float  # the commit's seconds over HEAD's: above 1, HEAD is faster
    rounds: tuple[float, ...]  # the same ratio round by round
    slower: bool  # HEAD more than the threshold slower
    moved: bool  # more than the threshold either way: worth a line in RESULTS.md


def compare(
    head: dict[str, list[float]], against: dict[str, list[float]], threshold: float = THRESHOLD
) -> list[Compared]:
    """Per measure, medians over the rounds and HEAD's speed against the commit."""
    out = []
    for measure in MEASURES:
        mine, theirs = head.get(measure.key), against.get(measure.key)
        if not mine or not theirs:
            continue
        a, b = statistics.median(mine), statistics.median(theirs)
        speed = b / a if a > 0 else float("inf")
        rounds = tuple(y / x if x > 0 else float("inf") for x, y in zip(mine, theirs, strict=True))
        slower = a > b * (1 + threshold)
        moved = slower or b > a * (1 + threshold)
        out.append(Compared(measure, a, b, speed, rounds, slower, moved))
    return out


def verdict(rows: list[Compared], against: str, threshold: float) -> tuple[int, str]:
    """The exit status and the closing line."""
    slow = [row for row in rows if row.slower and row.measure.gated]
    moved = [row for row in rows if row.moved and row.measure.gated]
    percent = f"{threshold:.0%}"
    if slow:
        names = ", ".join(f"{row.measure.key} {row.speed:.3f}x" for row in slow)
        return 1, (
            f"HEAD is more than {percent} slower than {against}: {names}. Find the cause, or "
            "rerun on a quiet machine and record the move in benchmarks/RESULTS.md."
        )
    if moved:
        names = ", ".join(f"{row.measure.key} {row.speed:.3f}x" for row in moved)
        return 0, f"HEAD is more than {percent} faster than {against}: {names}; record it."
    return 0, f"HEAD is within {percent} of {against} on the race, the iteration and the run."


# ---- the command ---------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the commit HEAD is measured against")
    parser.add_argument("--head", default="HEAD", help="the commit measured (default HEAD)")
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds (default 2)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="default 0.03")
    parser.add_argument("--only", choices=["race", "run"], help="one of the two measures only")
    parser.add_argument(
        "--own-harness", action="store_true", help="each commit's own peer_trl.py, not HEAD's"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more (2 or more to alternate)")
    if args.threads < 1:
        parser.error(f"--threads {args.threads}: give 1 or more")
    if not 0 <= args.threshold < 1:
        parser.error(f"--threshold {args.threshold}: give a fraction, e.g. 0.03 for 3%")
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
    print("round  commit    " + "".join(f"{m.column:>9}" for m in shown) + "   (seconds)")
    for r, label in schedule((head.label, against.label), args.rounds):
        got = measure_round(by_label[label], args, harnesses[label], model, runs, r)
        for key, value in got.items():
            figures[label].setdefault(key, []).append(value)
        cells = "".join(f"{got[m.key]:>9.1f}" for m in shown if m.key in got)
        print(f"{r:>5}  {label[:8]:<8}  {cells}", flush=True)
    rows = compare(figures[head.label], figures[against.label], args.threshold)
    print(f"\n{'measure':<32}{'HEAD':>9}{against.label[:9]:>10}{'HEAD speed':>12}  per round")
    for row in rows:
        flag = "  <- slower" if row.slower else ""
        per = ", ".join(f"{x:.3f}" for x in row.rounds)
        print(
            f"{row.measure.label:<32}{row.head:>9.2f}{row.against:>10.2f}{row.speed:>11.3f}x"
            f"  {per}{flag}"
        )
    status, line = verdict(rows, against.label, args.threshold)
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
