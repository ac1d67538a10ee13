"""Rollout throughput: generated tokens per second of the lock-step engine with the tiny model.

Three ways to produce the same kind of work, 64 tic-tac-toe matches with the random-init tiny
model sampling its moves (system prompt dropped, 8 new tokens at most per turn):

- lockstep:   our engine, all matches at once (one batched `HFPolicy.act` per tick);
- unshared:   the same, with the shared-prompt-prefix prefill turned off;
- growing:    the same as lockstep, with Hugging Face's `DynamicCache` (grown by ``torch.cat``
              each step) instead of our preallocated KV cache;
- sequential: our engine, one match after another (batch-1 generation);
- raw:        the ceiling, ``model.generate`` on exactly the prompts the lock-step engine
              produced at each tick, at the same batch size and ``max_new_tokens``, with no
              game logic, tokenisation or decoding around it.

A generated token is counted up to and including a row's first EOS, the same way for all
modes. A random-init model almost never writes a legal ``[cell]``, so the invalid-move
allowance is raised (default 4 retries) to keep each match going for several ticks, with the
retry message in the prompt as in early training.

Run:  python benchmarks/rollout_throughput.py [--threads 2] [--matches 64] [--rounds 3]
      python benchmarks/rollout_throughput.py --width 512 --layers 6   # a ~20M-parameter shape
      python benchmarks/rollout_throughput.py --precision bf16-mixed   # skipped without bf16 units
The last lines are ``speedup_vs_sequential=``, ``speedup_vs_growing_cache=`` and
``fraction_of_raw_generate=``.
"""

from __future__ import annotations

import argparse
import copy
import os
import time
from collections.abc import Sequence
from contextlib import nullcontext

import torch
from transformers import DynamicCache

from selfplay.api.game import InvalidMoveRules
from selfplay.api.types import Episode
from selfplay.core.machine.hardware import cpu_bf16_message, cpu_has_bf16_units
from selfplay.core.models import hf_policy
from selfplay.core.models.hf_policy import HFPolicy
from selfplay.core.models.tiny import build_tiny
from selfplay.core.rollout import play
from selfplay.games.tictactoe import TicTacToe


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--matches", type=int, default=64, help="concurrent matches")
    parser.add_argument("--rounds", type=int, default=3, help="timed batches of matches")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--allowance", type=int, default=4, help="invalid-move retries")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--precision", default="32-true", help="32-true, bf16-mixed, bf16-true")
    parser.add_argument("--width", type=int, default=0, help="hidden size (0: the tiny model)")
    parser.add_argument("--layers", type=int, default=4, help="layers, with --width")
    parser.add_argument(
        "--force", action="store_true", help="run bf16 even on a CPU without bf16 units"
    )
    return parser.parse_args()


def model_shape(width: int, layers: int) -> dict[str, int]:
    """The tiny model's config overrides for a wider, deeper model (none for ``width=0``)."""
    if not width:
        return {}
    heads = max(1, width // 64)
    return {
        "hidden_size": width,
        "intermediate_size": width * 3,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
    }


def generated_tokens(episodes: Sequence[Episode]) -> int:
    return sum(len(turn.token_ids) for episode in episodes for turn in episode.turns)


def time_lockstep(
    game: TicTacToe, policy: HFPolicy, seeds: list[int]
) -> tuple[float, int, list[Episode]]:
    seating = {role: policy for role in game.roles}
    start = time.perf_counter()
    episodes = play(game, [seating] * len(seeds), seeds)
    return time.perf_counter() - start, generated_tokens(episodes), episodes


def time_growing(game: TicTacToe, policy: HFPolicy, seeds: list[int]) -> tuple[float, int]:
    """Lock-step with the cache that grows by concatenation (what the decode loop used before)."""
    preallocated = hf_policy.preallocated_cache
    hf_policy.preallocated_cache = lambda config, _capacity: DynamicCache(config=config)
    try:
        return time_lockstep(game, policy, seeds)[:2]
    finally:
        hf_policy.preallocated_cache = preallocated


def time_sequential(game: TicTacToe, policy: HFPolicy, seeds: list[int]) -> tuple[float, int]:
    seating = {role: policy for role in game.roles}
    start = time.perf_counter()
    episodes = [play(game, [seating], [seed])[0] for seed in seeds]
    return time.perf_counter() - start, generated_tokens(episodes)


def tick_batches(episodes: Sequence[Episode]) -> list[list[tuple[int, ...]]]:
    """The prompts of each lock-step tick: with one policy, a match's k-th turn is at tick k."""
    longest = max(len(e.turns) for e in episodes)
    return [[e.turns[k].prompt_ids for e in episodes if len(e.turns) > k] for k in range(longest)]


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        mask[row, width - len(prompt) :] = 1
    return ids, mask


def time_raw_generate(policy: HFPolicy, batches: list[list[tuple[int, ...]]]) -> tuple[float, int]:
    model, eos, pad = policy.model, policy.tokenizer.eos_token_id, policy.pad_id
    inputs = [left_pad(batch, pad) for batch in batches]
    elapsed, tokens = 0.0, 0
    for ids, mask in inputs:
        start = time.perf_counter()
        with (
            torch.inference_mode(),
            policy.forward_context() if policy.forward_context else nullcontext(),
        ):
            out = model.generate(
                input_ids=ids,
                attention_mask=mask,
                do_sample=True,
                max_new_tokens=policy.max_new_tokens,
                pad_token_id=pad,
                eos_token_id=eos,
            )
        elapsed += time.perf_counter() - start
        tokens += count_until_eos(out[:, ids.shape[1] :], eos)
    return elapsed, tokens


def count_until_eos(new: torch.Tensor, eos: int) -> int:
    is_eos = new == eos
    first = is_eos.int().argmax(-1)
    return int(torch.where(is_eos.any(-1), first + 1, new.shape[1]).sum())


def measure(game: TicTacToe, policy: HFPolicy, rounds: int, n: int, seed: int) -> dict:
    """(seconds, generated tokens) per mode, summed over ``rounds`` batches of ``n`` matches."""
    unshared = copy.copy(policy)
    unshared.share_prefix = False
    warm = list(range(10**6, 10**6 + n))
    _, _, warm_episodes = time_lockstep(game, policy, warm)  # warm-up: allocator, kernels
    time_sequential(game, policy, warm[:4])
    time_raw_generate(policy, tick_batches(warm_episodes)[:2])
    totals = {name: [0.0, 0] for name in ("growing", "unshared", "sequential", "raw generate")}
    totals = {"lockstep": [0.0, 0, 0], **totals}
    for r in range(rounds):
        seeds = list(range(seed + r * n, seed + (r + 1) * n))
        seconds, tokens, episodes = time_lockstep(game, policy, seeds)
        batches = tick_batches(episodes)
        totals["lockstep"][2] += len(batches)
        for name, (s, t) in {
            "lockstep": (seconds, tokens),
            "growing": time_growing(game, policy, seeds),
            "unshared": time_lockstep(game, unshared, seeds)[:2],
            "sequential": time_sequential(game, policy, seeds),
            "raw generate": time_raw_generate(policy, batches),
        }.items():
            totals[name][0] += s
            totals[name][1] += t
    return totals


def main() -> None:
    args = parse_args()
    load = os.getloadavg()[0]
    torch.set_num_threads(args.threads)
    if args.precision.startswith("bf16") and not (cpu_has_bf16_units() or args.force):
        print(f"skipped: {cpu_bf16_message(args.precision)}")
        return
    torch.manual_seed(args.seed)
    shape = model_shape(args.width, args.layers)
    model, tokenizer = build_tiny(seed=args.seed, **shape)
    options = {"max_new_tokens": args.max_new_tokens, "include_system": False}
    policy = HFPolicy(model, tokenizer, name="tiny", seed=args.seed, **options)
    if args.precision == "bf16-true":
        model.to(torch.bfloat16)
    elif args.precision == "bf16-mixed":
        policy.forward_context = lambda: torch.autocast("cpu", dtype=torch.bfloat16)
    game = TicTacToe(rules=InvalidMoveRules(allowance=args.allowance))
    totals = measure(game, policy, args.rounds, args.matches, args.seed)

    rate = {name: row[1] / row[0] for name, row in totals.items()}
    size = sum(p.numel() for p in model.parameters())
    print(
        f"{'tiny' if not args.width else 'wider'} model, {size:,} parameters, "
        f"{args.precision}; torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; load average before: {load:.2f}"
    )
    print(
        f"{args.rounds} rounds x {args.matches} matches, {totals['lockstep'][2]} lock-step "
        f"ticks, max_new_tokens={args.max_new_tokens}, allowance={args.allowance}"
    )
    print(f"{'mode':<14}{'seconds':>10}{'tokens':>10}{'tokens/s':>12}")
    for name, row in totals.items():
        print(f"{name:<14}{row[0]:>10.2f}{row[1]:>10d}{rate[name]:>12.0f}")
    print(f"speedup_vs_sequential={rate['lockstep'] / rate['sequential']:.2f}")
    print(f"speedup_vs_growing_cache={rate['lockstep'] / rate['growing']:.2f}")
    print(f"fraction_of_raw_generate={rate['lockstep'] / rate['raw generate']:.2f}")


if __name__ == "__main__":
    main()
