"""Learning benchmark: does the tiny default model learn tic-tac-toe (and Kuhn poker) here?

Trains from the embedded `tiny` model with a cold start and then self-play, evaluating every
few iterations against the game's scripted players, and prints wall-clock against win rate
vs `random` and non-loss rate vs `minimax`, beside two reference levels: the cold-start
checkpoint (the "before" column) and a uniformly random legal player.

    python benchmarks/learning.py                       # tic-tac-toe, its own recipe
    python benchmarks/learning.py --game kuhn-poker --minutes 10
    python benchmarks/learning.py --set train.lr=1e-3   # any RunConfig key
    python benchmarks/learning.py --recipe tictactoe-mixed --threads 1   # the best so far
    python benchmarks/learning.py --recipe tictactoe-selfplay --iterations 20   # self-play only
    python benchmarks/learning.py --recipe tictactoe-cosine --iterations 180 --threads 1

Results go to a run folder (metrics.csv has every eval) and the summary is printed last.
When ``--out DIR`` already holds an unfinished ``run`` (a stopped benchmark), it goes on from
that run's newest checkpoint with its saved settings (as ``selfplay run --resume``) instead.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from selfplay.api.policy import ScriptedPolicy
from selfplay.core.evaluate import evaluate
from selfplay.core.plan.config_loader import build_config
from selfplay.core.plan.recipes import resolve
from selfplay.core.run.folder.run_folder import resume_config
from selfplay.core.run.trainer import train
from selfplay.plugins.manager import registries

# The recipes are the registered ones (recipes/, `selfplay recipes`): what each trains with.
# Here, beside them, is how each was measured: its evaluations (every N iterations, on M
# matches against each scripted player), passed as the user's own settings.
MEASURED = {
    "tictactoe": ["eval.every=10", "eval.matches=200"],
    "tictactoe-cosine": ["eval.every=10", "eval.matches=200"],
    "tictactoe-long": ["eval.every=10", "eval.matches=200"],
    "tictactoe-mixed": ["eval.every=5", "eval.matches=200"],
    "tictactoe-selfplay": ["eval.every=5", "eval.matches=100"],
    "kuhn-poker": ["eval.every=10", "eval.matches=400"],
}


def default_recipe(game: str) -> str | None:
    """The game's own recipe, else a recipe named like the game, else none."""
    recipes = registries().recipes
    own = getattr(registries().games.get(game), "recipe", None)
    return own or (game if game in recipes else None)


def random_reference(game_name: str, matches: int) -> dict[str, float]:
    """A uniformly random legal player's results against the scripted players."""
    game = registries().games.get(game_name)()
    results = evaluate(game, ScriptedPolicy("random"), matches=matches, seed=1)
    return {name: r.win_rate for name, r in results.items()} | {
        f"{name}/non_loss": r.non_loss_rate for name, r in results.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", help="default: the recipe's game, else tictactoe")
    parser.add_argument(
        "--recipe",
        choices=sorted(entry.name for entry in registries().recipes),
        help="registered recipe to train with (default: the game's own; `selfplay recipes`)",
    )
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--minutes", type=float, default=30.0, help="stop after this long")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = args.out or Path(tempfile.mkdtemp(prefix="selfplay-learning-"))
    recipe = args.recipe or default_recipe(args.game or "tictactoe")
    measured = MEASURED.get(recipe or "", ["eval.every=10", "eval.matches=200"])
    overrides = [*measured, *args.set, f"threads={args.threads}"]
    stopped = out / "run"
    if (stopped / "config.yaml").is_file() and not (stopped / "summary.json").is_file():
        print(f"going on with the stopped run {stopped} (its saved settings)")
        config = resume_config(stopped, args.iterations, {}, [f"minutes={args.minutes}"])
    else:
        flags = {
            "game": args.game,  # None: the recipe's game, else the default
            "recipe": recipe or "none",
            "iterations": args.iterations,
            "minutes": args.minutes,
            "out": out,
            "name": "run",
        }
        config = build_config(None, flags, overrides)
    result = train(config)
    print("random legal player:", random_reference(resolve(config).game, 200))
    print("run folder:", out / "run")
    for name in result.after:
        b, a = result.before[name], result.after[name]
        print(
            f"{name}: win {b.win_rate:.3f} -> {a.win_rate:.3f}  non-loss "
            f"{b.non_loss_rate:.3f} -> {a.non_loss_rate:.3f}  payoff "
            f"{b.mean_payoff:+.3f} -> {a.mean_payoff:+.3f}"
        )


if __name__ == "__main__":
    main()
