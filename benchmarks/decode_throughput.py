"""Decode throughput: our engine's sampling loop (`HFPolicy.generate`) against ``model.generate``.

Same random-init model (the tiny architecture widened: ``--shape 150m`` or ``1b``), the same
prompts (random character ids of 80-120 tokens, left-padded), the same number of new
tokens, sampling at temperature 1, in bf16 (weights cast, ``bf16-true``) on a GPU or in the
model's fp32 on the CPU. Tokens/s counts every generated token up to and including a row's
first EOS, the same way for both. Each batch size is timed twice per side, alternated.

    python benchmarks/decode_throughput.py --device cuda --shape 150m --batches 64,256
    python benchmarks/decode_throughput.py --device cuda --shape 1b --batches 64,256
    python benchmarks/decode_throughput.py --shape test --batches 8     # a CPU smoke run

The last line sums it up: ``decode SHAPE: bB ours/generate=R (X vs Y tok/s), ...``.
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from selfplay.core.models.hf_policy import HFPolicy
from selfplay.core.models.tiny import build_tiny

SHAPES = {
    "test": {"hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 2},
    "150m": {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 12},
    "1b": {"hidden_size": 2048, "intermediate_size": 5504, "num_hidden_layers": 20},
}


def build(shape: str, device: str, bf16: bool) -> HFPolicy:
    dims = SHAPES[shape]
    heads = max(1, dims["hidden_size"] // 64)
    model, tokenizer = build_tiny(
        seed=0, num_attention_heads=heads, num_key_value_heads=heads,
        max_position_embeddings=512, **dims,
    )  # fmt: skip
    model = model.to(device, torch.bfloat16 if bf16 else torch.float32)
    return HFPolicy(model, tokenizer, max_new_tokens=1, share_prefix=False)


def prompts(count: int, vocab: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(7, vocab) for _ in range(rng.randint(80, 120))] for _ in range(count)]


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_ours(policy: HFPolicy, rows: list[list[int]], device: str) -> tuple[float, int]:
    sync(device)
    start = time.perf_counter()
    tokens, _ = policy.generate(rows, list(range(len(rows))))
    sync(device)
    return time.perf_counter() - start, sum(len(t) for t in tokens)


def time_generate(policy: HFPolicy, rows: list[list[int]], device: str) -> tuple[float, int]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), policy.pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, width - len(row) :] = torch.tensor(row)
        mask[i, width - len(row) :] = 1
    ids, mask = ids.to(device), mask.to(device)
    eos = policy.tokenizer.eos_token_id
    sync(device)
    start = time.perf_counter()
    with torch.inference_mode():
        out = policy.model.generate(
            input_ids=ids, attention_mask=mask, do_sample=True,
            max_new_tokens=policy.max_new_tokens, pad_token_id=policy.pad_id, eos_token_id=eos,
        )  # fmt: skip
    sync(device)
    new = out[:, width:]
    is_eos = new == eos
    first = is_eos.int().argmax(-1)
    counted = torch.where(is_eos.any(-1), first + 1, new.shape[1]).sum()
    return time.perf_counter() - start, int(counted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--shape", default="150m", choices=sorted(SHAPES))
    parser.add_argument("--batches", default="64,256", help="comma-separated batch sizes")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    bf16 = args.device == "cuda"
    policy = build(args.shape, args.device, bf16)
    policy.max_new_tokens = args.new_tokens
    size = sum(p.numel() for p in policy.model.parameters())
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"{args.shape}: {size / 1e6:.1f}M parameters, {'bf16' if bf16 else 'fp32'}, {name}")
    vocab = policy.model.config.vocab_size
    summary = []
    for batch in [int(b) for b in args.batches.split(",") if b]:
        rows = prompts(batch, vocab, seed=batch)
        time_ours(policy, rows[:2], args.device)  # warm-up: kernels, allocator
        time_generate(policy, rows[:2], args.device)
        totals = {"ours": [0.0, 0], "generate": [0.0, 0]}
        for _ in range(2):
            for side, fn in (("ours", time_ours), ("generate", time_generate)):
                seconds, tokens = fn(policy, rows, args.device)
                totals[side][0] += seconds
                totals[side][1] += tokens
        rate = {side: tokens / seconds for side, (seconds, tokens) in totals.items()}
        print(
            f"batch {batch}: ours {rate['ours']:.0f} tok/s, generate {rate['generate']:.0f} "
            f"tok/s, ratio {rate['ours'] / rate['generate']:.2f}",
            flush=True,
        )
        summary.append(
            f"b{batch} ours/generate={rate['ours'] / rate['generate']:.2f} "
            f"({rate['ours']:.0f} vs {rate['generate']:.0f} tok/s)"
        )
    print(f"decode {args.shape}: " + ", ".join(summary))


if __name__ == "__main__":
    main()
