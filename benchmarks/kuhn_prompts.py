"""Does a model play legal Kuhn-poker moves before any training? Four prompt variants.

Issue 18's pretrained-model item starts from SmolLM2-135M answering the Kuhn prompt with
prose ("Please refer to a previous response."). This asks the model, at each of the 12
decision points (card x history), for a move under four prompts and counts the answers the
game refuses:

  as-is         the game's own prompt (rules as the system message, then the position)
  prefill[      the same, with the reply started as "[" (an assistant prefill)
  ask           the position followed by "Reply with [a] or [b] only."
  ask+prefill[  both

Greedy: one answer per decision point; sampled: ``--samples`` per point at ``--temperature``.

    python benchmarks/kuhn_prompts.py --model smollm2-135m --max-new-tokens 3 --temperature 0.7
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from selfplay.api.policy import Request
from selfplay.api.types import Message
from selfplay.core.config import RunConfig
from selfplay.core.plan.build import build_learner
from selfplay.games.kuhn_poker import CARDS, KuhnPoker, legal_moves

VARIANTS = ("as-is", "prefill[", "ask", "ask+prefill[")
HISTORIES = ((), ("check",), ("bet",), ("check", "bet"))


def decision_points(game: KuhnPoker) -> list[tuple[object, str]]:
    points = []
    for card in CARDS:
        for history in HISTORIES:
            role = "player_0" if len(history) % 2 == 0 else "player_1"
            other = next(c for c in CARDS if c != card)
            cards = (card, other) if role == "player_0" else (other, card)
            points.append((game.State(seed=0, cards=cards, history=history), role))
    return points


def prompt(game: KuhnPoker, state, role: str, variant: str) -> tuple[list[Message], str]:
    messages = list(game.observe(state, role))
    if variant.startswith("ask"):
        legal = " or ".join(f"[{m}]" for m in legal_moves(state.history))
        last = messages[-1]
        messages = [*messages[:-1], Message(last.role, f"{last.content}\nReply with {legal} only.")]
    if variant.endswith("prefill["):
        return [*messages, Message("assistant", "[")], "["
    return messages, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--samples", type=int, default=8, help="sampled answers per point")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    generation = {"max_new_tokens": args.max_new_tokens, "temperature": args.temperature}
    policy = build_learner(RunConfig(model=args.model, game="kuhn-poker", generation=generation))
    game = KuhnPoker()
    points = decision_points(game)
    print(f"model {args.model}, max_new_tokens {args.max_new_tokens}, T {args.temperature}")
    for greedy in (True, False):
        for variant in VARIANTS:
            started = time.perf_counter()
            asked = []
            for k, (state, role) in enumerate(points):
                messages, start = prompt(game, state, role, variant)
                for s in range(1 if greedy else args.samples):
                    rng = random.Random(k * 100 + s)
                    asked.append((Request(game, state, role, tuple(messages), rng), start))
            answers = policy.act([request for request, _ in asked], greedy=greedy)
            texts = [start + a.text for (_, start), a in zip(asked, answers, strict=True)]
            refused = sum(
                game.action_of(text, request.state, request.role)[0] is None
                for (request, _), text in zip(asked, texts, strict=True)
            )
            print(
                f"{'greedy' if greedy else 'sampled':8s}{variant:14s} invalid {refused}/"
                f"{len(texts)} = {refused / len(texts):.2f}  "
                f"{time.perf_counter() - started:.0f} s  e.g. {texts[:2]}",
                flush=True,
            )


if __name__ == "__main__":
    main()
