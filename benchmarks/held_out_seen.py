"""Held-out accuracy of a proposer/solver run, split by whether training set the problem.

    python benchmarks/held_out_seen.py RUN [RUN ...]
    python benchmarks/held_out_seen.py COLD_START_RUN --seen-from RUN


A proposer that varies numbers can write, by chance, a problem of the held-out split word
for word ("What is 4 + 5?" is one of a hundred one-digit sums), and the solver is then
trained on it. This plays the run's newest solver greedily on every held-out problem (as
the run's own task evaluation does) and prints its accuracy on the held-out problems the
solver was set in training (episodes.jsonl) and on those it never saw. `--seen-from`
takes the problems from another run's training: the cold-start solver (a run of one
iteration whose solver learns nothing, `lr: 1.0e-30`) scored on the same two sets as the
trained one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from selfplay.core.commands.play import load_checkpoint_policy
from selfplay.core.evaluate import task_verdicts
from selfplay.core.plan.build import build_game


def seen_problems(folder: Path) -> set[str]:
    """Problems the solver answered (and was scored on) in training."""
    seen = set()
    with (folder / "episodes.jsonl").open() as f:
        for line in f:
            state = json.loads(line)["state"]
            if state.get("verdict") is not None:
                seen.add(state["problem"])
    return seen


def split_accuracy(
    folder: Path, learner: str = "solver", seen_from: Path | None = None
) -> dict[str, float]:
    loaded = load_checkpoint_policy(folder, learner)
    game = build_game(loaded.config)
    states = game.task_states("held_out", 1000, loaded.config.seed)
    verdicts = task_verdicts(game, loaded.policy, states)
    seen = seen_problems(seen_from or folder)
    row: dict[str, float] = {}
    for name, keep in (("all", lambda p: True), ("seen", seen.__contains__)):
        chosen = [v for s, v in zip(states, verdicts, strict=True) if keep(s.problem)]
        row[f"{name}_problems"] = len(chosen)
        row[f"{name}_accuracy"] = sum(bool(v) for v in chosen) / max(len(chosen), 1)
    unseen = [v for s, v in zip(states, verdicts, strict=True) if s.problem not in seen]
    row["unseen_problems"] = len(unseen)
    row["unseen_accuracy"] = sum(bool(v) for v in unseen) / max(len(unseen), 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--learner", default="solver")
    parser.add_argument(
        "--seen-from", type=Path, help="run whose training decides which problems were seen"
    )
    args = parser.parse_args()
    for folder in args.runs:
        row = split_accuracy(folder, args.learner, args.seen_from)
        print(json.dumps({"run": str(folder), **row}))


if __name__ == "__main__":
    main()
