"""Policy-table scoring: each prompt read once for all its answers, against a row per answer.

    python benchmarks/table_scoring.py                           # Leduc poker, tiny, 1 thread
    python benchmarks/table_scoring.py --game kuhn-poker --repeats 20

Scores every legal answer at every information set of the game (what exact exploitability
reads after each iteration) both ways, side by side in one process, and prints the seconds of
each, their ratio and the largest difference between the two tables' log-probabilities.
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from selfplay.api.game import answer_text
from selfplay.api.policy import Request
from selfplay.core.config import RunConfig
from selfplay.core.models.loading import build_learner
from selfplay.core.models.policy_table import score_answers
from selfplay.core.plan.build import build_game
from selfplay.core.plan.config_loader import build_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="openspiel:leduc_poker")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    game = build_game(RunConfig(game=args.game))
    policy = build_learner(build_config(None, {"game": args.game, "model": args.model}, []))
    infos = game.information_sets()
    requests = [
        Request(game, i.state, i.role, tuple(game.observe(i.state, i.role)), random.Random(0))
        for i in infos
    ]
    prompts = policy.encode(requests)
    menus = [[answer_text(game, a) for a in i.actions] for i in infos]
    rows = sum(len(m) for m in menus)
    sizes = f"{min(map(len, prompts))}-{max(map(len, prompts))}"
    print(f"{args.game}: {len(infos)} information sets, {rows} answers, prompts of {sizes} tokens")
    seconds, tables = {}, {}
    for shared in (False, True, False, True):  # each twice, alternating: the second counts
        start = time.perf_counter()
        for _ in range(args.repeats):
            _, tables[shared] = score_answers(policy, prompts, menus, 1.0, shared)
        seconds[shared] = (time.perf_counter() - start) / args.repeats
    difference = (tables[True] - tables[False]).abs().max().item()
    ratio = seconds[False] / seconds[True]
    print(f"a row per answer: {seconds[False]:.2f} s; each prompt once: {seconds[True]:.2f} s")
    print(f"ratio {ratio:.2f}; largest difference in a log-probability {difference:.1e}")


if __name__ == "__main__":
    main()
