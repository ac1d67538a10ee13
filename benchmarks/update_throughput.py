"""Update-step throughput: our policy-gradient update vs a raw PyTorch training step.

Both process the same token batch (tic-tac-toe-shaped samples: a ~44-token prompt and a
4-token answer) on the same `tiny` model: ours through `core/train/update/updater.py`'s Updater
(scoring, clipped policy-gradient loss, entropy, gradient clipping, AdamW); the raw one is
forward + cross-entropy on the answer tokens + backward + AdamW. Tokens/s counts every token
forwarded (prompt and answer). Prints the ratio last; the target is >= 0.85.

    python benchmarks/update_throughput.py [--threads 2] [--samples 512] [--rounds 5]
    python benchmarks/update_throughput.py --device cuda --precision bf16-mixed --width 1024 \
        --layers 12 --samples 4096 --minibatch 512      # a ~150M-parameter model on a GPU
"""

from __future__ import annotations

import argparse
import random
import time
from contextlib import nullcontext

import lightning as L
import torch
import torch.nn.functional as F

from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData
from selfplay.core.algorithms.pg import PolicyGradient
from selfplay.core.machine.hardware import cpu_bf16_message, cpu_has_bf16_units
from selfplay.core.models.scoring import pack
from selfplay.core.models.tiny import build_tiny
from selfplay.core.train.update.updater import Updater


def make_samples(n: int, seed: int = 0) -> list[Sample]:
    rng = random.Random(seed)
    samples = []
    for _ in range(n):
        prompt = (1, *(rng.randrange(7, 100) for _ in range(rng.randint(40, 48))))
        action = (rng.randrange(7, 100), rng.randrange(7, 100), rng.randrange(7, 100), 2)
        samples.append(Sample("g", "r", prompt, action, (-1.0,) * 4, rng.choice([-1, 1]), ()))
    return samples


def build_model(args: argparse.Namespace) -> torch.nn.Module:
    """The tiny model, or a wider and deeper one of the same shape (``--width``, ``--layers``)."""
    if not args.width:
        return build_tiny(seed=0)[0]
    shape = {
        "hidden_size": args.width,
        "intermediate_size": args.width * 3,
        "num_hidden_layers": args.layers,
        "num_attention_heads": args.width // 64,
        "num_key_value_heads": args.width // 64,
    }
    return build_tiny(seed=0, **shape)[0]


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def ours(samples, args: argparse.Namespace) -> tuple[float, int]:
    minibatch, rounds = args.minibatch, args.rounds
    fabric = L.Fabric(accelerator=args.device, devices=1, precision=args.precision)
    model = build_model(args)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer = fabric.setup(model, optimizer)
    objective = PolicyGradient(kl_coef=0.0, entropy_coef=0.01)
    updater = Updater(model, optimizer, objective, 0, fabric.backward, fabric.clip_gradients)
    advantages = [float(s.reward) for s in samples]
    items = objective.prepare(IterationData(samples, advantages))
    generator = torch.Generator().manual_seed(0)
    chunks = -(-len(samples) // minibatch)
    updater.update(items, generator, chunks)  # warm-up
    synchronize(args.device)
    start = time.perf_counter()
    for _ in range(rounds):
        updater.update(items, generator, chunks)
    synchronize(args.device)
    return time.perf_counter() - start, rounds * sum(len(s.prompt_ids) + 4 for s in samples)


def raw(samples, args: argparse.Namespace) -> tuple[float, int]:
    minibatch, rounds, device = args.minibatch, args.rounds, args.device
    model = build_model(args).to(device)
    if args.precision == "bf16-true":
        model = model.to(torch.bfloat16)
    autocast = (
        torch.autocast(device, dtype=torch.bfloat16)
        if args.precision == "bf16-mixed"
        else nullcontext()
    )
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batches = []
    for start in range(0, len(samples), minibatch):
        part = samples[start : start + minibatch]
        ids, attention, starts = pack([s.prompt_ids for s in part], [s.token_ids for s in part], 0)
        labels = torch.full_like(ids, -100)
        for i, (s, begin) in enumerate(zip(part, starts.tolist(), strict=True)):
            labels[i, begin : begin + len(s.token_ids)] = torch.tensor(s.token_ids)
        batches.append((ids.to(device), attention.to(device), labels.to(device)))

    def step(ids, attention, labels):
        with autocast:
            logits = model(input_ids=ids, attention_mask=attention).logits
        loss = F.cross_entropy(logits[:, :-1].float().flatten(0, 1), labels[:, 1:].flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for batch in batches:
        step(*batch)  # warm-up
    synchronize(device)
    start = time.perf_counter()
    for _ in range(rounds):
        for batch in batches:
            step(*batch)
    synchronize(device)
    return time.perf_counter() - start, rounds * sum(len(s.prompt_ids) + 4 for s in samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--samples", type=int, default=512)
    parser.add_argument("--minibatch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--precision", default="32-true", help="32-true, bf16-mixed, bf16-true")
    parser.add_argument("--width", type=int, default=0, help="hidden size (0: the tiny model)")
    parser.add_argument("--layers", type=int, default=4, help="layers, with --width")
    parser.add_argument(
        "--force", action="store_true", help="run bf16 even on a CPU without bf16 units"
    )
    args = parser.parse_args()
    on_cpu = args.device == "cpu"
    if on_cpu and args.precision.startswith("bf16") and not (cpu_has_bf16_units() or args.force):
        print(f"skipped: {cpu_bf16_message(args.precision)}")
        return
    torch.set_num_threads(args.threads)
    samples = make_samples(args.samples)
    results = {}
    for name, fn in (("raw", raw), ("ours", ours), ("raw again", raw), ("ours again", ours)):
        seconds, tokens = fn(samples, args)
        results[name] = tokens / seconds
        print(f"{name:>10}: {tokens / seconds:9.0f} tokens/s ({seconds:.2f} s)")
    ratio = (results["ours"] + results["ours again"]) / (results["raw"] + results["raw again"])
    print(f"ratio_ours_to_raw={ratio:.3f}")


if __name__ == "__main__":
    main()
