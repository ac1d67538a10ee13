"""Does a self-judge agree with the verifier? A model answers math-solver problems, then judges
its own answers 0-5, and the math verifier decides the same answers.

Seed 000 warns that a generator judging itself shares its own biases, so its high scores say
only that an answer suits the judge. This measures it: the share of judge answers that were
readable, the mean score of passing and failing answers, the AUC (the chance that a passing
answer outscores a failing one; 0.5 is no better than a coin) and the agreement of
"score >= threshold" with the verdict.

    python benchmarks/self_judge.py --model smollm2-135m --problems 24 --answers 4

The judge's reply starts from ``--prefill`` ("Score:"), so a model that would not begin with
a score on its own is read after it.
"""

from __future__ import annotations

import argparse
import json

import torch

from selfplay.api.reward import RewardContext
from selfplay.core.models.reward_models import RewardModels
from selfplay.core.plan.build import build_game, build_learner, build_reward
from selfplay.core.plan.config_loader import build_config
from selfplay.core.rollout import play


def judged(args: argparse.Namespace) -> list[tuple[float | None, float]]:
    """(judge score 0-1 or None, verdict 1/0) for every answer."""
    overrides = [
        f"game_options.answers={args.answers}",
        f"generation.max_new_tokens={args.max_new_tokens}",
        "reward_options.judge.model=learner",
        "reward_options.judge.scope=turn",
        "reward_options.judge.scale=5",
        f"reward_options.judge.template={args.template}",
        f"reward_options.judge.max_new_tokens={args.judge_tokens}",
        f"reward_options.judge.prefill={args.prefill}",
        f"game_options.topics=[{args.topic}]",
    ]
    flags = {"game": "math-solver", "model": args.model, "reward": "judge+verdict", "seed": 0}
    config = build_config(flags=flags, overrides=overrides)
    game, learner = build_game(config), build_learner(config)
    learner.name = "learner"
    reward = build_reward(config, game)
    reward.bind(RewardContext(game=game, policy=RewardModels(config, learner)))
    seatings = [{"solver": learner}] * args.problems
    episodes = play(game, seatings, list(range(args.problems)))
    pairs = []
    for scores in reward(episodes):
        judge, verdict = scores.parts["judge"].turns, scores.parts["verdict"].turns
        pairs.extend(zip(judge, verdict, strict=True))
    return [(j, v) for j, v in pairs if v is not None]


def agreement(pairs: list[tuple[float | None, float]], threshold: float) -> dict[str, float]:
    readable = [(j, v) for j, v in pairs if j is not None]
    passed = [j for j, v in readable if v > 0]
    failed = [j for j, v in readable if v <= 0]
    wins = sum((p > f) + 0.5 * (p == f) for p in passed for f in failed)
    agree = sum((j >= threshold) == (v > 0) for j, v in readable)
    return {
        "answers": float(len(pairs)),
        "readable": len(readable) / max(len(pairs), 1),
        "passed": float(len(passed)),
        "failed": float(len(failed)),
        "mean_score_passed": sum(passed) / len(passed) if passed else float("nan"),
        "mean_score_failed": sum(failed) / len(failed) if failed else float("nan"),
        "auc": wins / (len(passed) * len(failed)) if passed and failed else float("nan"),
        "agreement": agree / len(readable) if readable else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--problems", type=int, default=24)
    parser.add_argument("--answers", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--template", default="judge_turn")
    parser.add_argument("--topic", default="arithmetic", help="math-solver topic of the problems")
    parser.add_argument("--prefill", default="Score:", help="the start of the judge's reply")
    parser.add_argument("--judge-tokens", type=int, default=4, help="judge tokens after it")
    parser.add_argument("--threshold", type=float, default=0.6, help="score/5 read as 'correct'")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(json.dumps(agreement(judged(args), args.threshold), indent=2))


if __name__ == "__main__":
    main()
