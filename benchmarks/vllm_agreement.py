"""A served model's Kuhn-poker move probabilities against the run's own, in memory.

At each of Kuhn poker's 12 information sets (the run's game options: its answer prefix), the
probability of each legal answer is read twice from the server and once in memory:

  legal choice   what a served run's ``generation.choice=legal`` asks (core/serving/
                 legal_choice.py): the trainer's prompt ids and each answer's tokens, then
                 end-of-sequence, echoed one prompt per request; the answers' summed
                 log-probabilities, softmaxed over the legal answers
  table          what ``selfplay eval --suite solver --model openai:...`` asks
                 (core/models/served/table.py): the chat through the server's /tokenize,
                 each closed answer echoed; and the exploitability of that table
  in memory      the run's policy (its checkpoint: the LoRA adapters on their base) scoring
                 the same answers (core/models/policy_table.py)

It prints the largest gap of a probability and of a log-probability over the 24 answers, and
the two exploitabilities. Run it against a server of the run's export
(scripts/vllm_server.py); fp32 on both sides.

    python benchmarks/vllm_agreement.py RUN_DIR 'openai:http://127.0.0.1:8000/v1#NAME'
"""

from __future__ import annotations

import argparse
import random

import torch

from selfplay.api.policy import Request
from selfplay.core.commands.play import load_checkpoint_policy
from selfplay.core.models.policy_table import legal_answers, policy_table, score_answers
from selfplay.core.models.scoring import eos_id
from selfplay.core.models.served.policy import ServedPolicy
from selfplay.core.models.served.table import served_table
from selfplay.core.plan.build import build_game
from selfplay.core.serving.rollout_client import Worker, Workers


def legal_choice_gap(local, requests: list[Request], server: str) -> tuple[float, float]:
    """(largest |q gap|, largest |log q gap|) between the served and in-memory choice."""
    worker = Worker(server)
    worker.check(local.tokenizer)
    prompts = local.encode(requests)
    menus = [legal_answers(req) for req in requests]
    _, logps = score_answers(local, prompts, menus, local.temperature)
    mine = logps.sum(-1).double()
    stop = eos_id(local)
    rows, lengths = [], []
    for prompt, menu in zip(prompts, menus, strict=True):
        for answer in menu:
            ids = [*local.tokenizer(answer, add_special_tokens=False)["input_ids"], stop]
            rows.append(([*prompt, *ids], 0))
            lengths.append(len(ids))
    scored = Workers([worker], print).generate(rows, {"temperature": local.temperature}, "echo")
    theirs = torch.tensor(
        [sum(lp[-n:]) for (_, lp), n in zip(scored, lengths, strict=True)], dtype=torch.double
    )
    q_gap = log_gap = 0.0
    k = 0
    for menu in menus:
        a = torch.log_softmax(mine[k : k + len(menu)], 0)
        b = torch.log_softmax(theirs[k : k + len(menu)], 0)
        q_gap = max(q_gap, (a.exp() - b.exp()).abs().max().item())
        log_gap = max(log_gap, (a - b).abs().max().item())
        k += len(menu)
    return q_gap, log_gap


def table_gap(local, game, server: str) -> tuple[float, float, float]:
    """(largest |p gap|, exploitability served, exploitability in memory)."""
    mine = policy_table(local, game, local.temperature)
    theirs = served_table(ServedPolicy(server), game, local.temperature)
    gap = max(abs(theirs[key][a] - p) for key, row in mine.items() for a, p in row.items())
    return gap, game.exploitability(theirs), game.exploitability(mine)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", help="the run folder (or a checkpoint folder in it)")
    parser.add_argument("server", help="openai:URL#NAME of a server of the run's export")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    loaded = load_checkpoint_policy(args.run)
    local, game = loaded.policy, build_game(loaded.config)
    if "timeout=" not in args.server:
        args.server = args.server.replace("#", "?timeout=300#", 1)  # a CPU server is slow
    infos = game.information_sets()
    requests = [
        Request(game, info.state, info.role, tuple(game.observe(info.state, info.role)), rng)
        for info, rng in zip(infos, map(random.Random, range(len(infos))), strict=True)
    ]
    q_gap, log_gap = legal_choice_gap(local, requests, args.server)
    print(f"legal choice: max |q gap| {q_gap:.3g}, max |log q gap| {log_gap:.3g}")
    p_gap, served, direct = table_gap(local, game, args.server)
    print(
        f"table: max |p gap| {p_gap:.3g}; exploitability {served:.6f} served, "
        f"{direct:.6f} in memory"
    )


if __name__ == "__main__":
    main()
