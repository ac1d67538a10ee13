"""Rerun README's learning figures and compare them with README's text.

    python benchmarks/readme_figures.py                          # the default run, seeds 0-4
    python benchmarks/readme_figures.py --claim tictactoe-cosine # 180 iterations of self-play
    python benchmarks/readme_figures.py --claim kuhn-legal-pg    # Kuhn, exact exploitability
    python benchmarks/readme_figures.py --claim leduc-legal-pg   # Leduc, the openspiel extra
    python benchmarks/readme_figures.py --seeds 0 --out DIR      # one seed

Each claim is a paragraph of README.md (it starts with the claim's opening words) and the
command that measures it, run once per seed with the thread count fixed:

- ``default``: README's first command, ``selfplay run --seed S --set threads=1``; wins against
  ``random`` and non-loss against ``minimax``, before and after training.
- ``tictactoe-cosine``: pure self-play for 180 iterations, ``python benchmarks/learning.py
  --recipe tictactoe-cosine --iterations 180 --minutes 1000 --threads 1 --set seed=S``; the mean
  of the last three evaluations of non-loss against ``minimax``, and wins against ``random``.
- ``kuhn-legal-pg``: Kuhn poker for 134 iterations, the legal choice trained by ``legal-pg``
  with a moving KL reference, ``python benchmarks/opponents.py --samplers mmd:0.5:0.05
  --iterations 134 ...``; the exact exploitability of the last iterate and of the average of
  the iterates.
- ``leduc-legal-pg``: Leduc poker for 20 iterations, ``selfplay run --recipe
  leduc-poker-legal --seed S --set threads=1``; the same two figures.

A seed whose run folder already holds its results is read again rather than rerun. The script
prints the rerun's figures per seed, then compares them with the paragraph: the figures after
each named quantity (``0.35 → 0.65`` pairs, or single values, seeds in order) must match the
rerun to as many decimals as README prints. Exit 1 names each figure that differs.

Why the thread count is fixed: torch splits a matrix product's sums between its threads, and
another split rounds the last bits differently; a sampled move that sat on a boundary then
flips, and the run plays other matches from there. With one thread the same commit played
the same 5,120 matches on an Intel Xeon (AVX-512, AMX) and an AMD EPYC; with two it played
others (benchmarks/RESULTS.md, "Why README's default-run figure moved between machines").
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
Figure = tuple[float, ...]  # one value, or (before, after)


@dataclass(frozen=True)
class Claim:
    opening: str  # README's paragraph starts with these words
    run: str  # the folder, inside a seed's folder, that holds the run's results
    done: str  # the file whose presence means the seed's run finished
    command: str  # as a user types it; {seed}, {threads}, {folder} (the seed's), {parent}, {name}
    figures: tuple[tuple[str, Callable[[Path], Figure]], ...]  # (README's words, reader)


@dataclass(frozen=True)
class Summary:
    """A (before, after) pair from the run's summary.json."""

    opponent: str
    key: str

    def __call__(self, run: Path) -> Figure:
        result = json.loads((run / "summary.json").read_text())
        return (result["before"][self.opponent][self.key], result["after"][self.opponent][self.key])


@dataclass(frozen=True)
class Metric:
    """The mean of a metric's last ``last`` logged values in the run's metrics.csv."""

    key: str
    last: int = 1

    def __call__(self, run: Path) -> Figure:
        with open(run / "metrics.csv", newline="") as handle:
            values = [float(row[self.key]) for row in csv.DictReader(handle) if row.get(self.key)]
        if len(values) < self.last:
            sys.exit(f"{run / 'metrics.csv'}: {len(values)} values of {self.key}, not {self.last}")
        return (sum(values[-self.last :]) / self.last,)


CLAIMS = {
    "default": Claim(
        opening="On seeds",
        run=".",
        done="summary.json",
        command="selfplay run --seed {seed} --set threads={threads} --out {parent} --name {name}",
        figures=(
            ("wins against `random`", Summary("random", "win_rate")),
            ("non-loss against `minimax`", Summary("minimax", "non_loss_rate")),
        ),
    ),
    "tictactoe-cosine": Claim(
        opening="Pure self-play for 180 iterations",
        run="run",
        done="summary.json",
        command="python benchmarks/learning.py --recipe tictactoe-cosine --iterations 180"
        " --minutes 1000 --threads {threads} --set seed={seed} --out {folder}",
        figures=(
            ("the mean of the last three evaluations", Metric("eval/minimax/non_loss_rate", 3)),
            ("wins against `random`", Summary("random", "win_rate")),
        ),
    ),
    "kuhn-legal-pg": Claim(
        opening="Kuhn poker for 134 iterations",
        run="mmd-0.5-0.05",
        done="summary.json",
        command="python benchmarks/opponents.py --samplers mmd:0.5:0.05 --minutes 1000"
        " --iterations 134 --threads {threads} --seed {seed}"
        " --set cold_start.players=[random,nash] --set train.lr=5e-5"
        " --set generation.choice=legal --set objective=legal-pg --out {folder}",
        figures=(
            ("exploitability of the last iterate", Metric("exploitability/last")),
            ("of the average of the iterates", Metric("exploitability/iterates_average")),
        ),
    ),
    "leduc-legal-pg": Claim(
        opening="Leduc poker for 20 iterations",
        run=".",
        done="summary.json",
        command="selfplay run --recipe leduc-poker-legal --seed {seed} --set threads={threads}"
        " --out {parent} --name {name}",
        figures=(
            ("exploitability of the last iterate", Metric("exploitability/last")),
            ("of the average of the iterates", Metric("exploitability/iterates_average")),
        ),
    ),
}
SENTENCE_END = re.compile(r"\.\s+[A-Z(]|;")
NUMBER = r"\d\.\d+"


def quoted(text: str, claim: Claim) -> list[list[tuple[str, ...]]]:
    """README's figures per quantity, seeds in order, from the claim's paragraph.

    A quantity's figures run from its words to the next quantity's words or the end of the
    sentence, whichever comes first; each is a pair ``a → b`` or a single value.
    """
    start = text.find(claim.opening)
    if start < 0:
        sys.exit(f"README.md has no paragraph starting {claim.opening!r}: nothing to compare")
    paragraph = text[start:].split("\n\n", 1)[0]
    body = " ".join(paragraph.split())
    found = []
    for phrase, _ in claim.figures:
        at = body.find(phrase)
        if at < 0:
            sys.exit(f"README.md's paragraph {claim.opening!r} does not name {phrase}")
        rest = body[at + len(phrase) :]
        stops = [rest.find(p) for p, _ in claim.figures if rest.find(p) > 0]
        end = SENTENCE_END.search(rest)
        stop = min([*stops, end.start() if end else len(rest)])
        found.append(re.findall(rf"({NUMBER}) → ({NUMBER})|({NUMBER})", rest[:stop]))
    return [[tuple(v for v in match if v) for match in matches] for matches in found]


def measure(claim: Claim, seed: int, args: argparse.Namespace) -> list[Figure]:
    folder = (args.out / f"seed-{seed}").resolve()
    run = folder / claim.run
    if not (run / claim.done).exists():
        fields = dict(seed=seed, threads=args.threads, folder=folder)
        fields |= dict(parent=folder.parent, name=folder.name)
        command = [word.format(**fields) for word in claim.command.split()]
        if command[0] == "python":  # this interpreter, the script beside this one
            command[:2] = [sys.executable, str(ROOT / command[1])]
        print("$", " ".join(command), flush=True)
        subprocess.run(command, check=True)
    return [read(run) for _, read in claim.figures]


def shown(figure: Figure, like: tuple[str, ...] | None) -> tuple[str, ...]:
    """The figure printed with README's decimals (two where README has none)."""
    places = [len(text.split(".")[1]) for text in like] if like else [2] * len(figure)
    if like and len(like) != len(figure):
        places = [places[0]] * len(figure)
    return tuple(f"{value:.{p}f}" for value, p in zip(figure, places, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--claim", choices=sorted(CLAIMS), default="default")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="default: readme-figures/CLAIM")
    args = parser.parse_args()
    claim = CLAIMS[args.claim]
    args.out = args.out or Path("readme-figures") / args.claim
    runs = {seed: measure(claim, seed, args) for seed in args.seeds}
    text = quoted(README.read_text(encoding="utf-8"), claim)
    phrases = [phrase for phrase, _ in claim.figures]
    print("| seed | " + " | ".join(phrases) + " |")
    print("|---|" + "---|" * len(phrases))
    wrong = []
    for seed, figures in runs.items():
        cells = []
        for (phrase, _), figure, said in zip(claim.figures, figures, text, strict=True):
            readme = said[seed] if seed < len(said) else None
            ours = shown(figure, readme)
            cells.append(" → ".join(ours))
            if readme is None:
                wrong.append(f"seed {seed}: README quotes no {phrase} figure (rerun: {cells[-1]})")
            elif readme != ours:
                wrong.append(
                    f"seed {seed}: {phrase}: README says {' → '.join(readme)}, "
                    f"the rerun {cells[-1]}"
                )
        print(f"| {seed} | " + " | ".join(cells) + " |")
    for line in wrong:
        print(line)
    print("README's figures match the rerun" if not wrong else f"{len(wrong)} figure(s) differ")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
