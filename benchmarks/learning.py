"""Learning benchmark: does the tiny default model learn tic-tac-toe (and Kuhn poker) here?

Trains from the embedded `tiny` model with a cold start and then self-play, evaluating every
few iterations against the game's scripted players, and prints wall-clock against win rate
vs `random` and non-loss rate vs `minimax`, beside two reference levels: the cold-start
checkpoint (the "before" column) and a uniformly random legal player.

    python benchmarks/learning.py                       # tic-tac-toe, the default recipe
    python benchmarks/learning.py --game kuhn-poker --minutes 10
    python benchmarks/learning.py --set train.lr=1e-3   # any RunConfig key
    python benchmarks/learning.py --recipe tictactoe-mixed --threads 1   # the best so far
    python benchmarks/learning.py --recipe tictactoe-selfplay --iterations 20   # self-play only
    python benchmarks/learning.py --recipe tictactoe-cosine --iterations 180 --threads 1

Results go to a run folder (metrics.csv has every eval) and the summary is printed last.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from selfplay.api.policy import ScriptedPolicy
from selfplay.core.evaluate import evaluate
from selfplay.core.run.config_loader import build_config
from selfplay.core.run.trainer import train
from selfplay.plugins.manager import registries

# the default run's settings (with tic-tac-toe's own run_defaults: search targets, the
# compact prompt), evaluated every 10 iterations on 200 matches
TICTACTOE = ["cold_start.steps=300", "matches=128", "eval.every=10", "eval.matches=200"]
RECIPES = {
    "tictactoe": TICTACTOE,
    # issue 18's item 1, pure self-play for 30 minutes (RESULTS.md, "A cosine step size
    # against the swings"): the default's settings, the step size annealed to 1e-5 by the last
    # iteration; run it with --iterations 180 --minutes 30
    "tictactoe-cosine": [*TICTACTOE, "train.lr_schedule=cosine", "train.lr_min=1e-5"],
    # the best 30-minute recipe so far (RESULTS.md, PO30): a quarter each of mirror play,
    # random, minimax and the cold-start copy, one RAE baseline per opponent
    "tictactoe-mixed": [
        "cold_start.steps=300",
        "eval.every=5",
        "eval.matches=200",
        "game_options.compact=true",
        "matches=256",
        "train.minibatch_size=128",
        "train.update_epochs=2",
        "train.lr=1e-3",
        "train.kl_coef=0.02",
        "estimator_options.decay=0",
        "estimator_options.per_opponent=true",
        "opponent=pool",
        "pool.scripted=[random,minimax]",
        "pool.snapshot_every=0",
        "opponent_options.p_latest=0.25",
        "train.search_weight=0",  # as measured, before tic-tac-toe's run_defaults had it
    ],
    # pure self-play, the best 20-iteration recipe so far (RESULTS.md, "g5"): mirror play and
    # the learner's own greedy self, one RAE baseline per opponent; no scripted player in
    # training
    "tictactoe-selfplay": [
        "cold_start.steps=300",
        "eval.every=5",
        "eval.matches=100",
        "game_options.compact=true",
        "matches=256",
        "train.minibatch_size=128",
        "train.update_epochs=2",
        "train.lr=3e-4",
        "train.kl_coef=0.02",
        "estimator_options.decay=0",
        "estimator_options.per_opponent=true",
        "opponent_options.greedy=0.5",
        "train.search_weight=0",  # as measured, before tic-tac-toe's run_defaults had it
    ],
    "kuhn-poker": [
        "cold_start.steps=200",
        "cold_start.players=[random]",
        "matches=256",
        "eval.every=10",
        "eval.matches=400",
    ],
}


def random_reference(game_name: str, matches: int) -> dict[str, float]:
    """A uniformly random legal player's results against the scripted players."""
    game = registries().games.get(game_name)()
    results = evaluate(game, ScriptedPolicy("random"), matches=matches, seed=1)
    return {name: r.win_rate for name, r in results.items()} | {
        f"{name}/non_loss": r.non_loss_rate for name, r in results.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="tictactoe")
    parser.add_argument(
        "--recipe", choices=sorted(RECIPES), help="settings to start from (default: the game's)"
    )
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--minutes", type=float, default=30.0, help="stop after this long")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    out = args.out or Path(tempfile.mkdtemp(prefix="selfplay-learning-"))
    recipe = args.recipe or args.game
    overrides = [*RECIPES.get(recipe, []), *args.set, f"threads={args.threads}"]
    config = build_config(
        None,
        {
            "game": args.game,
            "iterations": args.iterations,
            "minutes": args.minutes,
            "out": out,
            "name": "run",
        },
        overrides,
    )
    result = train(config)
    print("random legal player:", random_reference(args.game, 200))
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
