"""Rerun README's default-run figures and compare them with README's text.

    python benchmarks/readme_figures.py                       # seeds 0-4, threads=1
    python benchmarks/readme_figures.py --seeds 0 --out DIR   # one seed

Each seed is README's first command with the seed and the thread count fixed, run as a user
runs it (``selfplay run --seed S --set threads=1 --out DIR --name seed-S``); a run folder that
already has its ``summary.json`` is read again rather than rerun. The script prints, per seed,
greedy wins against ``random`` and non-loss against ``minimax`` before and after training,
then compares them with README.md's sentence that starts "On seeds": every pair there
(``0.35 → 0.65``, seeds 0, 1, 2, ... in order) must match the rerun to two decimals. Exit 1
names each figure that differs.

Why the thread count is fixed: torch splits a matrix product's sums between its threads, and
another split rounds the last bits differently; a sampled move that sat on a boundary then
flips, and the run plays other matches from there. With one thread the same commit played
the same 5,120 matches on an Intel Xeon (AVX-512, AMX) and an AMD EPYC; with two it played
others (benchmarks/RESULTS.md, "Why README's default-run figure moved between machines").
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
FIGURES = (
    ("random", "win_rate", "wins against `random`"),
    ("minimax", "non_loss_rate", "non-loss against `minimax`"),
)


def run_seed(seed: int, args: argparse.Namespace) -> dict:
    folder = args.out / f"seed-{seed}"
    if not (folder / "summary.json").exists():
        command = ["selfplay", "run", "--seed", str(seed), "--set", f"threads={args.threads}"]
        command += ["--out", str(args.out), "--name", folder.name]
        print("$", " ".join(command), flush=True)
        subprocess.run(command, check=True)
    return json.loads((folder / "summary.json").read_text())


def measured(summary: dict) -> dict[str, tuple[float, float]]:
    return {
        opponent: (summary["before"][opponent][key], summary["after"][opponent][key])
        for opponent, key, _ in FIGURES
    }


def quoted(text: str) -> dict[str, list[tuple[str, str]]]:
    """README's pairs per opponent, from the paragraph that starts "On seeds"."""
    paragraph = re.search(r"On seeds.*?(?:\n\n|$)", text, re.S)
    if paragraph is None:
        sys.exit("README.md has no paragraph starting 'On seeds': nothing to compare with")
    body = " ".join(paragraph.group(0).split())
    pairs = {}
    for opponent, _, phrase in FIGURES:
        start = body.find(phrase)
        if start < 0:
            sys.exit(f"README.md's 'On seeds' paragraph does not name {phrase}")
        rest = body[start + len(phrase) :]
        stop = min((rest.find(p) for _, _, p in FIGURES if rest.find(p) > 0), default=len(rest))
        pairs[opponent] = re.findall(r"(\d\.\d\d) → (\d\.\d\d)", rest[:stop])
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("readme-figures"))
    args = parser.parse_args()
    runs = {seed: measured(run_seed(seed, args)) for seed in args.seeds}
    print("| seed | wins vs random (before → after) | non-loss vs minimax (before → after) |")
    print("|---|---|---|")
    for seed, figures in runs.items():
        cells = [f"{a:.2f} → {b:.2f}" for a, b in figures.values()]
        print(f"| {seed} | " + " | ".join(cells) + " |")
    text = quoted(README.read_text(encoding="utf-8"))
    wrong = []
    for opponent, _, phrase in FIGURES:
        pairs = text[opponent]
        for seed in args.seeds:
            a, b = runs[seed][opponent]
            ours = (f"{a:.2f}", f"{b:.2f}")
            if seed >= len(pairs):
                rerun = f"{ours[0]} → {ours[1]}"
                wrong.append(f"seed {seed}: README quotes no {phrase} figure (rerun: {rerun})")
            elif pairs[seed] != ours:
                said = " → ".join(pairs[seed])
                rerun = f"{ours[0]} → {ours[1]}"
                wrong.append(f"seed {seed}: {phrase}: README says {said}, the rerun {rerun}")
    for line in wrong:
        print(line)
    print("README's figures match the rerun" if not wrong else f"{len(wrong)} figure(s) differ")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
