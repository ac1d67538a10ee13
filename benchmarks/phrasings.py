"""The suites under every phrasing, side by side: how much of a score is memorised form.

    python benchmarks/phrasings.py --policy tiny --seeds 0 1 2 3 4 --out DIR
    python benchmarks/phrasings.py --policy runs/s0 runs/s1 runs/s2 runs/s3 runs/s4 --out DIR
    python benchmarks/phrasings.py --report DIR           # the table from what DIR holds

Each policy (a run folder, or a model name ``--model`` takes) is measured by every suite
(``selfplay eval --suite NAME --phrasings default reworded obfuscated no-menu --json``),
once, its report kept in ``DIR/POLICY/SUITE.json`` (a report already there is read, not
measured again). The table gives each figure's mean under each phrasing over every (policy,
seed) value, its min-max, and the memorisation gap: the mean under ``default`` minus the mean
under ``obfuscated`` (the same game under other names; games/phrasing.py). A gap near zero
says the figure does not depend on the familiar form; a large one, that it does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

SUITES = ("solver", "gtbench-lite", "reference-pool")
PHRASINGS = ("default", "reworded", "obfuscated", "no-menu")
# the figures the table shows (per seat and per agent figures are in the reports)
SHOWN = (
    "tictactoe/non_loss_rate",
    "tictactoe/value_kept",
    "kuhn-poker/payoff_vs_nash",
    "kuhn-poker/exploitability",
    "nra",
    "win_rate",
    "tic_tac_toe/nra",
    "kuhn_poker/nra",
    "tictactoe/rating",
    "kuhn-poker/rating",
    "connect_four/rating",
)


def folder_name(policy: str) -> str:
    return Path(policy).name if Path(policy).is_dir() else policy.replace("/", "_")


def measure(policy: str, suite: str, seeds: list[int], out: Path, matches: int | None) -> Path:
    path = out / folder_name(policy) / f"{suite}.json"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    source = [policy] if Path(policy).is_dir() else ["--model", policy]
    command = [
        sys.executable, "-m", "selfplay.core.commands.cli", "eval", "--suite", suite, *source,
        "--phrasings", *PHRASINGS, "--seeds", *map(str, seeds), "--json",
    ]  # fmt: skip
    if matches is not None:
        command += ["--matches", str(matches)]
    print("$", " ".join(command[2:]), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{suite} on {policy} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    path.write_text(done.stdout)
    return path


def values(out: Path) -> dict[str, dict[str, list[float]]]:
    """{figure: {phrasing: every value over policies and seeds}} of every report in ``out``."""
    found: dict[str, dict[str, list[float]]] = {}
    for path in sorted(out.glob("*/*.json")):
        report = json.loads(path.read_text())
        for name, figure in report["figures"].items():
            for phrasing, by_seed in figure["values"].items():
                found.setdefault(name, {}).setdefault(phrasing, []).extend(by_seed.values())
    return found


def table(found: dict[str, dict[str, list[float]]], every: bool = False) -> str:
    head = " | ".join(f"{p}: mean (min-max)" for p in PHRASINGS)
    lines = [f"| figure | {head} | gap default - obfuscated |", "|---|" + "---|" * 5]
    for name in sorted(found) if every else [n for n in SHOWN if n in found]:
        cells, means = [], {}
        for phrasing in PHRASINGS:
            got = found[name].get(phrasing)
            if not got:
                cells.append("")
                continue
            means[phrasing] = statistics.fmean(got)
            cells.append(f"{means[phrasing]:.3f} ({min(got):.3f}-{max(got):.3f})")
        gap = means.get("default", 0.0) - means.get("obfuscated", 0.0)
        lines.append(f"| {name} | {' | '.join(cells)} | {gap:+.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", nargs="+", default=[], help="run folders or model names")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--suites", nargs="+", default=list(SUITES))
    parser.add_argument(
        "--matches", type=int, help="per opponent and seed (default: each suite's own count)"
    )
    parser.add_argument("--out", type=Path, required=False, help="where the reports are kept")
    parser.add_argument("--report", type=Path, help="print the table of a folder of reports")
    parser.add_argument("--all", action="store_true", help="every figure, not the chosen few")
    args = parser.parse_args()
    out = args.report or args.out
    if out is None:
        parser.error("give --out DIR (with --policy) or --report DIR")
    for policy in args.policy:
        for suite in args.suites:
            measure(policy, suite, args.seeds, out, args.matches)
    print(table(values(out), args.all))


if __name__ == "__main__":
    main()
