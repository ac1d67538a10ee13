"""A pretrained model's Kuhn poker before and after a run: issue 18's item-4 yardsticks.

For a run folder (e.g. ``--model smollm2-135m --lora --game kuhn-poker``) this measures the
policy of its newest checkpoint, or with ``--before`` the run's model as it loaded (LoRA
adapters start as the identity, so that is the pretrained model):

- the exact exploitability of its Kuhn policy table (scored from its log-probabilities at the
  run's temperature, as the run's ``exploitability/last``);
- greedy matches against ``random`` and ``nash``: win rate, payoff, invalid-move rate, both as
  the run played (its ``generation.choice``) and writing each move freely (``choice=free``:
  whether the model has learned the form of a move as well as the choice);
- SPIRAL's transfer question: greedy accuracy on math-solver's held-out arithmetic problems
  and its never-trained transfer topic, answers written freely.

    python benchmarks/pretrained_kuhn.py RUN_DIR --before --json before.json
    python benchmarks/pretrained_kuhn.py RUN_DIR --json after.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from selfplay.core.commands.play import load_checkpoint_policy, run_config
from selfplay.core.evaluate import eval_seed, evaluate, task_metrics
from selfplay.core.models.policy_table import policy_table
from selfplay.core.plan.build import build_game, build_learner
from selfplay.games.math_solver import MathSolver


def measure(policy: Any, config: Any, matches: int, problems: int, math_tokens: int) -> dict:
    game = build_game(config)
    row: dict[str, Any] = {
        "exploitability": game.exploitability(
            policy_table(policy, game, config.generation.temperature)
        )
    }
    played = policy.choice
    for choice in dict.fromkeys((played, "free")):
        policy.choice = choice
        results = evaluate(game, policy, matches=matches, seed=eval_seed(config.seed))
        for opponent, result in results.items():
            metrics = result.as_metrics(prefix=f"{choice}")
            for name in ("win_rate", "mean_payoff", "invalid_rate"):
                key = f"{choice}/{opponent}/{name}"
                if key in metrics:
                    row[key] = metrics[key]
    policy.choice = "free"
    tokens, policy.max_new_tokens = policy.max_new_tokens, math_tokens
    row.update(task_metrics(MathSolver(), policy, limit=problems, seed=0))
    policy.max_new_tokens, policy.choice = tokens, played
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="the run folder (or a checkpoint folder)")
    parser.add_argument("--before", action="store_true", help="the model as the run loaded it")
    parser.add_argument("--matches", type=int, default=100, help="greedy matches per opponent")
    parser.add_argument("--problems", type=int, default=50, help="math problems per split")
    parser.add_argument("--math-tokens", type=int, default=48, help="tokens per math answer")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    if args.before:
        config = run_config(args.run)
        policy = build_learner(config)
    else:
        loaded = load_checkpoint_policy(args.run)
        config, policy = loaded.config, loaded.policy
    row = measure(policy, config, args.matches, args.problems, args.math_tokens)
    row["seconds"] = round(time.perf_counter() - start, 1)
    for key, value in row.items():
        print(f"{key:>36}  {value:.4f}" if isinstance(value, float) else f"{key:>36}  {value}")
    if args.json:
        args.json.write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
