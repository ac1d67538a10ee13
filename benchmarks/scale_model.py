"""Scale model: predicted iteration time and bottleneck of a self-play run, 1 GPU to N nodes.

A roofline simulator (stdlib only) of one iteration of the loop: generation, judge calls, the
update, the gradient all-reduce and, with rollouts on inference servers, the weight sync.
docs/scaling.md explains the model, its assumptions and its calibration.

    python benchmarks/scale_model.py --params 7e9 --matches 256 --gpus 8 --nodes 1 --lora
    python benchmarks/scale_model.py --calibrate cpu      # or --examples (RESULTS.md's)
"""

from __future__ import annotations

import argparse
import math
from collections import namedtuple
from dataclasses import dataclass, fields, replace

GB = 1e9


@dataclass(frozen=True)
class Device:
    """One accelerator (or this CPU); DEVICES says where each figure comes from."""

    name: str
    flops: float  # peak dense FLOP/s at the run's precision
    mem_bw: float  # bytes/s of device memory
    memory: float  # bytes of device memory
    train_mfu: float  # fraction of `flops` the update reaches on a wide model
    mfu_half_width: float  # hidden width at which the update reaches half of `train_mfu`
    prefill_mfu: float  # fraction of `flops` a prefill reaches
    decode_mfu: float  # fraction a compute-bound decode step reaches
    bw_eff: float  # fraction of `mem_bw` a memory-bound decode step reaches
    step_overhead: float  # seconds per decode step beyond the roofline (launches, sampling)
    intra_bw: float  # all-reduce bus bandwidth between devices of one node, bytes/s
    inter_bw: float  # the same between nodes, bytes/s per device
    bytes_per_param: int  # 2 for bf16, 4 for fp32


# The CPU: this 2-core machine at one thread, fp32, every figure fitted to CALIBRATION (not a
# datasheet). H100 SXM / H200: datasheet peak (989 TFLOP/s dense bf16; 3.35 / 4.8 TB/s; 80 /
# 141 GB); mfu_half_width is fitted to the one GPU update measured (150M, width 1024, H200:
# MFU 0.146); the rest are assumptions stated in docs/scaling.md.
DEVICES = {
    "cpu": Device("CPU, 1 thread", 1e11, 7e9, 24e9, 0.5, 0, 0.5, 0.5, 1, 1.5e-3, 5e9, 5e9, 4),
    "h100": Device("H100", 989e12, 3.35e12, 80e9, 0.45, 2130, 0.5, 0.4, 0.75, 2e-3, 4e11, 4e10, 2),
    "h200": Device("H200", 989e12, 4.8e12, 141e9, 0.45, 2130, 0.5, 0.4, 0.75, 2e-3, 4e11, 4e10, 2),
}  # fmt: skip
# Assumptions: a decode step of our in-process Hugging Face loop on a GPU costs this much per
# layer beyond the roofline (eager kernel launches; servers with CUDA graphs pay only the
# device's step_overhead), and a server takes this long to load new adapters / full weights.
HF_GPU_LAYER_OVERHEAD = 0.3e-3
SYNC_OVERHEAD = {True: 0.5, False: 2.0}


# Public model shapes: hidden width, layers, key/value width (KV heads x head size).
Shape = namedtuple("Shape", "name params hidden layers kv")
SHAPES = (
    Shape("tiny (ours)", 0.8e6, 128, 4, 128),
    Shape("SmolLM2-135M", 135e6, 576, 30, 192),
    Shape("150M (update benchmark)", 163e6, 1024, 12, 1024),
    Shape("Qwen2.5-0.5B", 494e6, 896, 24, 128),
    Shape("Llama-3.2-1B", 1.24e9, 2048, 16, 512),
    Shape("Llama-3.2-3B", 3.2e9, 3072, 28, 1024),
    Shape("Qwen2.5-7B", 7.6e9, 3584, 28, 512),
    Shape("Llama-3.1-8B", 8.0e9, 4096, 32, 1024),
    Shape("Qwen2.5-32B", 32.8e9, 5120, 64, 1024),
    Shape("Llama-3.1-70B", 70.6e9, 8192, 80, 1024),
)


def nearest_shape(params: float) -> Shape:
    return min(SHAPES, key=lambda s: abs(math.log(s.params / params)))


@dataclass(frozen=True)
class Run:
    """What one iteration does. Token counts are averages per learner turn."""

    params: float
    matches: int
    turns: float = 5.0  # learner turns per match (= update samples per match)
    prompt: int = 200
    answer: int = 32
    shared_prefix: int = 0  # prompt tokens every row of a call shares (prefilled once)
    lora: bool = False
    rank: int = 8  # LoRA rank
    kl: bool = True  # a reference forward for the KL term
    epochs: int = 1
    minibatch: int = 256
    judge_calls: float = 0.0  # judge prompts per match
    judge_params: float = 0.0  # 0: the policy's own size
    judge_prompt: int = 400
    judge_answer: int = 16  # tokens a judge writes per call


@dataclass(frozen=True)
class Layout:
    device: Device
    gpus: int = 1  # devices per node
    nodes: int = 1
    servers: int = 0  # devices that serve rollouts (vLLM/SGLang); 0: rollouts in-process
    judge_gpus: int = 0  # devices that serve the judge; 0: the rollout devices
    overlap: bool = False  # servers only: rollouts one update behind
    zero2: bool = False
    gen_tokens_per_s: float = 0.0  # measured rates per device; 0: the roofline
    judge_tokens_per_s: float = 0.0
    update_tokens_per_s: float = 0.0

    @property
    def learners(self) -> int:
        return self.gpus * self.nodes - self.servers - self.judge_gpus

    @property
    def grad_bytes(self) -> int:  # DDP under bf16-mixed reduces fp32 gradients, DeepSpeed bf16
        return 2 if self.zero2 else 4


def check_layout(layout: Layout) -> None:
    """Refuse a layout that cannot run, naming the bad value and the fix."""
    if layout.learners < 1:
        raise ValueError(
            f"--servers {layout.servers} + --judge-gpus {layout.judge_gpus} leave none of the "
            f"{layout.gpus * layout.nodes} devices (--gpus x --nodes) to the learner: lower them."
        )
    if layout.overlap and not layout.servers:
        raise ValueError(
            "--overlap needs --servers N: in-process rollouts share the learner's devices, "
            "so generation and the update cannot run at the same time."
        )


def trainable(run: Run) -> float:
    """All parameters, or LoRA adapters on q, k, v, o: rank x (in + out) per matrix and layer."""
    if not run.lora:
        return run.params
    s = nearest_shape(run.params)
    return run.rank * (6 * s.hidden + 2 * s.kv) * s.layers


def learner_bytes(run: Run, layout: Layout) -> float:
    """Weights, gradients, AdamW state and the KL reference on one learner device."""
    n = run.params
    if run.lora:  # a bf16 base (also the reference) + fp32 adapters, gradients, moments
        return n * 2 + trainable(run) * 16
    state = 4 + 12 / layout.learners if layout.zero2 else 16  # ZeRO-2 shards grads, moments
    return n * state + (n * 2 if run.kl else 0)


@dataclass(frozen=True)
class Calls:
    """`calls` batched generation calls of `rows` prompts each, spread over `devices`."""

    params: float
    rows: int
    prompt: int
    answer: int
    calls: float
    devices: int
    shared: int = 0  # prompt tokens every row shares, prefilled once


def generation(c: Calls, layout: Layout, hf_loop: bool, free: float | None, rate: float) -> float:
    """Seconds of generation: prefill, then decode steps bound by memory or by compute."""
    d, shape = layout.device, nearest_shape(c.params)
    batch = math.ceil(c.rows / c.devices)
    if rate:
        return c.calls * batch * c.answer / rate
    weights = c.params * d.bytes_per_param
    kv_token = 2 * shape.layers * shape.kv * d.bytes_per_param
    room = 0.9 * (free if free is not None else d.memory - weights)
    row = (c.prompt + c.answer) * kv_token
    if room < row:  # not one sequence fits beside the weights (no tensor parallelism here)
        return math.inf
    waves = math.ceil(batch * row / room)
    b = math.ceil(batch / waves)
    shared = min(c.shared, c.prompt)
    tokens = shared + b * (c.prompt - shared)
    prefill = max(2 * c.params * tokens / (d.flops * d.prefill_mfu), weights / d.mem_bw)
    eager = hf_loop and d.bytes_per_param == 2  # our own decode loop on a GPU
    overhead = d.step_overhead + eager * HF_GPU_LAYER_OVERHEAD * shape.layers
    decode = 0.0
    for step in range(c.answer):
        read = weights + b * (c.prompt + step) * kv_token
        compute = 2 * c.params * b / (d.flops * d.decode_mfu)
        decode += max(read / (d.mem_bw * d.bw_eff), compute) + overhead
    return c.calls * waves * (prefill + decode)


def ring(nbytes: float, devices: int, layout: Layout) -> float:
    """A ring all-reduce: each device sends and receives 2(G-1)/G of the bytes."""
    if devices < 2:
        return 0.0
    bw = layout.device.intra_bw if layout.nodes == 1 else layout.device.inter_bw
    return 2 * (devices - 1) / devices * nbytes / bw


def phases(run: Run, layout: Layout) -> dict[str, float]:
    """Seconds of each phase of one iteration."""
    check_layout(layout)
    d, in_process = layout.device, not layout.servers
    gen_devices = layout.servers or layout.learners
    free = d.memory - learner_bytes(run, layout) if in_process else None
    play = Calls(
        run.params, run.matches, run.prompt, run.answer, run.turns, gen_devices, run.shared_prefix
    )
    gen = generation(play, layout, in_process, free, layout.gen_tokens_per_s)
    judge = 0.0
    if run.judge_calls:
        rows = math.ceil(run.matches * run.judge_calls)
        judge_model, devices = run.judge_params or run.params, layout.judge_gpus or gen_devices
        ask = Calls(judge_model, rows, run.judge_prompt, run.judge_answer, 1, devices)
        hf_loop = in_process and not layout.judge_gpus
        judge = generation(ask, layout, hf_loop, None, layout.judge_tokens_per_s)
    samples = run.matches * run.turns
    tokens = samples * (run.prompt + run.answer) * run.epochs
    if layout.update_tokens_per_s:
        compute = tokens / (layout.update_tokens_per_s * layout.learners)
    else:
        width = nearest_shape(run.params).hidden
        mfu = d.train_mfu * width / (width + d.mfu_half_width)
        per_token = (4 if run.lora else 6) * run.params + (2 * run.params if run.kl else 0)
        compute = tokens * per_token / (layout.learners * d.flops * mfu)
    steps = math.ceil(samples / run.minibatch) * run.epochs
    shard = layout.learners if layout.zero2 else 1
    adam = steps * trainable(run) * 16 / shard / d.mem_bw  # read and write p, grad, m, v
    allreduce = steps * ring(trainable(run) * layout.grad_bytes, layout.learners, layout)
    sync = 0.0
    if layout.servers:
        link = d.intra_bw if layout.nodes == 1 else d.inter_bw
        sync = trainable(run) * 2 / link + SYNC_OVERHEAD[run.lora]
    return {"generation": gen, "judge": judge, "update": compute + adam,
            "all-reduce": allreduce, "weight sync": sync}  # fmt: skip


ROLLOUT, LEARN = ("generation", "judge"), ("update", "all-reduce", "weight sync")


def iteration(run: Run, layout: Layout) -> tuple[float, str]:
    """Iteration seconds and the phase that bounds it."""
    p = phases(run, layout)
    if not layout.overlap:
        return sum(p.values()), max(p, key=p.__getitem__)
    sides = [sum(p[k] for k in side) for side in (ROLLOUT, LEARN)]
    longer = ROLLOUT if sides[0] >= sides[1] else LEARN
    return max(sides), max(longer, key=p.__getitem__)


def report(run: Run, layout: Layout) -> str:
    p, (total, bottleneck) = phases(run, layout), iteration(run, layout)
    kind = f"LoRA r{run.rank}" if run.lora else "full fine-tune"
    rollouts = f"{layout.servers} rollout servers" if layout.servers else "rollouts in-process"
    order = "overlapped" if layout.overlap else "alternating"
    lines = [
        f"model {run.params:.3g} parameters (shape of {nearest_shape(run.params).name}), {kind}; "
        f"{run.matches} matches x {run.turns:g} turns of {run.prompt}+{run.answer} tokens",
        f"{layout.gpus} x {layout.nodes} node(s) of {layout.device.name}: {layout.learners} "
        f"learner(s), {rollouts}, {'ZeRO-2' if layout.zero2 else 'DDP'}, {order}",
        *(f"  {name:<12} {seconds:9.2f} s" for name, seconds in p.items()),
        f"  {'iteration':<12} {total:9.2f} s   bottleneck: {bottleneck}",
    ]
    g, steps = layout.learners, math.ceil(run.matches * run.turns / run.minibatch) * run.epochs
    grad = layout.grad_bytes
    served = run.matches * run.turns * (run.prompt + run.answer) * 8 * bool(layout.servers)
    moved = {  # bytes one iteration sends between devices
        "all-reduce, per learner device": steps * 2 * (g - 1) / g * trainable(run) * grad,
        "weight sync, to each server": trainable(run) * 2 * bool(layout.servers),
        "rollout results (token ids, logprobs)": served,
    }  # fmt: skip
    lines += [f"  moves {b / GB:9.3f} GB  {name}" for name, b in moved.items() if b]
    need, have = learner_bytes(run, layout), layout.device.memory
    fits = "fits" if need < 0.9 * have else "DOES NOT FIT: --lora, --zero2 or more devices"
    lines.append(f"  learner state {need / GB:.1f} GB per device of {have / GB:.0f} GB: {fits}")
    return "\n".join(lines)


# ---- calibration: predicted against measured (benchmarks/RESULTS.md, README) ----------------

CPU = DEVICES["cpu"]
CPU2 = replace(CPU, name="2 threads", flops=2 * CPU.flops)  # two cores, one memory bus
TINY, SMOL, M150 = 0.866e6, 135e6, 163.7e6  # parameters of tiny, SmolLM2-135M, the 150M shape


# what, the run, where, the phase (or "iteration"), measured seconds (benchmarks/RESULTS.md)
CALIBRATION: dict[str, tuple[tuple[str, Run, Layout, str, float], ...]] = {
    "cpu": (
        ("tiny rollout: 64 matches x 5 ticks x 3 rounds, unshared prompts, 2 threads",
             Run(TINY, 64, turns=15, prompt=101, answer=8), Layout(CPU2), "generation",
             3.35),
        ("tiny update: 512 samples of 48+4 tokens, no KL, 2 threads (19004 tok/s)",
             Run(TINY, 512, turns=1, prompt=48, answer=4, kl=False), Layout(CPU2), "update",
             512 * 52 / 19004),
        ("SmolLM2-135M tic-tac-toe rollout: 2 matches x 3 ticks, shared prompts, 1 thread",
             Run(SMOL, 2, turns=3, prompt=109, answer=8, shared_prefix=109), Layout(CPU),
             "generation", 5.04),
        ("SmolLM2-135M tic-tac-toe update: 6 samples of 109+8, full, KL, 1 thread",
             Run(SMOL, 2, turns=3, prompt=109, answer=8), Layout(CPU), "update", 13.7),
    ),
    "gpu": (
        ("150M update, one H200, bf16-mixed, 2048 samples of 48+4, no KL (146580 tok/s)",
             Run(M150, 2048, turns=1, prompt=48, answer=4, kl=False), Layout(DEVICES["h200"]),
             "update", 2048 * 52 / 146580),
    ),
}  # fmt: skip
CALIBRATION_ERROR = 0.35  # the stated bound: every case predicted within 35%


def calibrate(kind: str) -> tuple[str, float]:
    """A side-by-side table and the largest relative error."""
    lines, worst = [f"{'case':<84} {'measured':>9} {'predicted':>9} {'error':>6}"], 0.0
    for what, run, layout, phase, measured in CALIBRATION[kind]:
        p = (phases(run, layout) | {"iteration": iteration(run, layout)[0]})[phase]
        worst = max(worst, abs(p / measured - 1))
        lines.append(f"{what:<84} {measured:8.2f}s {p:8.2f}s {p / measured - 1:+6.0%}")
    lines.append(f"largest error {worst:.0%} (stated bound {CALIBRATION_ERROR:.0%})")
    return "\n".join(lines), worst


EXAMPLES = (  # the predictions recorded in benchmarks/RESULTS.md
    "--params 1e9 --matches 256 --gpus 1",
    "--params 1e9 --matches 256 --gpus 8",
    "--params 1e9 --matches 1024 --gpus 8 --nodes 4",
    "--params 7e9 --matches 256 --gpus 1 --lora",
    "--params 7e9 --matches 256 --gpus 8 --lora",
    "--params 7e9 --matches 256 --gpus 8 --zero2",
    "--params 7e9 --matches 256 --gpus 8 --servers 4 --overlap --lora",
    "--params 7e9 --matches 1024 --gpus 8 --nodes 4 --zero2",
    "--params 7e9 --matches 1024 --gpus 8 --nodes 4 --servers 16 --overlap --lora",
)
OPTIONS = (  # flag, type, default, help
    ("--params", float, 7e9, "model parameters, e.g. 7e9"),
    ("--matches", int, 256, "matches per iteration"),
    ("--turns", float, 5.0, "learner turns per match (= update samples per match)"),
    ("--prompt", int, 200, "prompt tokens per turn"),
    ("--answer", int, 32, "generated tokens per turn"),
    ("--shared-prefix", int, 0, "prompt tokens every row of a call shares"),
    ("--rank", int, 8, "LoRA rank"),
    ("--judge-prompt", int, 400, "prompt tokens per judge call"),
    ("--epochs", int, 1, "update epochs per iteration"),
    ("--minibatch", int, 256, "samples per optimiser step"),
    ("--judge-calls", float, 0.0, "judge prompts per match"),
    ("--judge-params", float, 0.0, "judge model parameters (0: the policy's)"),
    ("--gpus", int, 1, "devices per node"),
    ("--nodes", int, 1, "machines"),
    ("--servers", int, 0, "devices serving rollouts (vLLM/SGLang); 0: in-process"),
    ("--judge-gpus", int, 0, "devices serving the judge; 0: the rollout devices"),
    ("--gen-tokens-per-s", float, 0.0, "measured generation rate per device (0: roofline)"),
    ("--judge-tokens-per-s", float, 0.0, "measured judge rate per device (0: roofline)"),
    ("--update-tokens-per-s", float, 0.0, "measured update rate per device (0: roofline)"),
)
AT_LEAST = dict.fromkeys(("matches", "turns", "prompt", "answer", "rank", "epochs", "minibatch"), 1)
AT_LEAST |= {"params": 1, "gpus": 1, "nodes": 1, "shared_prefix": 0, "judge_calls": 0}
AT_LEAST |= {"servers": 0, "judge_gpus": 0}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calibrate", choices=sorted(CALIBRATION), help="predicted vs measured")
    p.add_argument("--examples", action="store_true", help="the predictions in RESULTS.md")
    p.add_argument("--device", choices=sorted(DEVICES), default="h100")
    for flag, kind, default, text in OPTIONS:
        p.add_argument(flag, type=kind, default=default, help=f"{text} (default {default:g})")
    p.add_argument("--lora", action="store_true", help="train LoRA adapters, not every weight")
    p.add_argument("--no-kl", dest="kl", action="store_false", help="no KL reference forward")
    p.add_argument("--zero2", action="store_true", help="DeepSpeed ZeRO-2 instead of DDP")
    p.add_argument("--overlap", action="store_true", help="rollouts one update behind")
    return p


def from_args(a: argparse.Namespace) -> tuple[Run, Layout]:
    for name, least in AT_LEAST.items():
        if getattr(a, name) < least:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} must be at least {least}, not {getattr(a, name)}.")
    run = Run(**{f.name: getattr(a, f.name) for f in fields(Run) if hasattr(a, f.name)})
    chosen = {f.name: getattr(a, f.name) for f in fields(Layout) if f.name != "device"}
    return run, Layout(DEVICES[a.device], **chosen)


def main(argv: list[str] | None = None) -> int:
    p = parser()
    a = p.parse_args(argv)
    if a.calibrate:
        table, worst = calibrate(a.calibrate)
        print(table)
        return 0 if worst <= CALIBRATION_ERROR else 1
    commands = [c.split() for c in EXAMPLES] if a.examples else [None]
    for command in commands:
        try:
            text = report(*from_args(p.parse_args(command) if command else a))
        except ValueError as error:
            p.error(str(error))
        if command:
            print(f"$ python benchmarks/scale_model.py {' '.join(command)}")
        print(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
