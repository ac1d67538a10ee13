"""Where a run trains: the Lightning Fabric built from the config's ``hardware`` section.

Two choices are ours rather than Lightning's. ``accelerator=auto`` means CUDA when a GPU is
visible and the CPU otherwise (Lightning's own ``auto`` would also pick Apple's ``mps``,
which this project does not test). DeepSpeed runs ZeRO stages 1 and 2; stage 3 is refused
(it shards the weights that checkpoints and the KL reference read whole). Under DeepSpeed,
gradients are clipped inside its optimizer step (``gradient_clipping`` in its config, set
from ``train.max_grad_norm``), so the update must not clip them again through Fabric, which
refuses to under DeepSpeed.

bf16 on the CPU runs (autocast for ``bf16-mixed``, bf16 weights for ``bf16-true``), and pays
only on a CPU with bf16 units (AMX or AVX512-BF16); on any other it is emulated and slower
than fp32, which a run is told at start-up.

The process, too: while the loop runs, the garbage collector's full passes skip the objects
that were alive when it started (`frozen_heap`); `set_threads` is the one place that decides
how many CPU threads torch uses; `quiet_libraries` silences what the libraries print on an
ordinary run that says nothing to its user.
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lightning as L
import torch

from selfplay.api.errors import ConfigError
from selfplay.core.config import RunConfig


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Inside the block the collector's full passes leave out what was alive on entry.

    The loop starts with the imported modules, the model and the tokenizer alive, most of the
    process's objects, and every iteration makes and drops thousands of records (episodes,
    samples, rows); a full pass over all of them took about 0.25 s on a 2-core CPU and came
    every few iterations, a tenth of the update's time in the peer race. What was frozen
    rejoins the collector on exit, so nothing is kept past the run.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def decide_threads(requested: int, cores: int, load: float | None) -> tuple[int, str | None]:
    """How many intra-op threads torch uses, and what to say at start-up about it.

    ``requested`` (the config's ``threads``) wins when set; otherwise every usable core, the
    same count on every start, so a resumed run computes as the first leg did. Measured on a
    2-core CPU beside other work (load 8-12; benchmarks/RESULTS.md, "Thread defaults under
    load"): a 40-step cold start took 356 s with two spinning threads, 23 s with one and
    25 s with two passive ones: OpenMP's threads spin while they wait for work, and on cores
    other processes keep busy a spinning thread burns the time slice its partner needs, so
    the `selfplay` command sets ``OMP_WAIT_POLICY=PASSIVE`` before torch loads (a user's own
    setting wins; core/commands/cli.py). When the 1-minute load already exceeds the cores, no
    setting keeps a run near its idle time, so the run says so.
    """
    threads = requested or cores
    if load is None or load <= cores:
        return threads, None
    return threads, (
        f"note: this machine is busy (load {load:.1f} on {cores} usable cores): the run "
        "shares them and will take several times its idle time. With other work running, "
        "threads=1 leaves the other core to it."
    )


def set_threads(requested: int, say: Any = None) -> int:
    """The one place a run's torch CPU threads are decided and set (see `decide_threads`)."""
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:
        load = None
    threads, note = decide_threads(requested, len(usable_cores()), load)
    torch.set_num_threads(threads)
    if note and say is not None:
        say(note)
    return threads


def quiet_libraries() -> None:
    """Leave out library output that tells a user of an ordinary run nothing.

    - transformers' "Token indices sequence length is longer than the specified maximum"
      (the tiny model reads 256 positions; a longer prompt is cut to its end on purpose,
      core/models) and its loading bars;
    - Lightning's deprecation warnings about its own internals;
    - huggingface_hub's download bars (a hub model still says where it is read from).
    Errors and warnings of our own still show.
    """
    logging.getLogger("transformers.tokenization_utils_base").setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # an install without transformers has no bars either
        pass
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for module in ("lightning", "lightning_fabric", "lightning_utilities", "pytorch_lightning"):
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=module)
    warnings.filterwarnings("ignore", message=r".*is deprecated.*", module=r"lightning.*")


def build_fabric(config: RunConfig) -> L.Fabric:
    hw = config.hardware
    accelerator = hw.accelerator
    if accelerator == "auto":
        accelerator = "cuda" if torch.cuda.is_available() else "cpu"
    strategy: Any = hw.strategy
    check_strategy(hw.strategy)
    if is_deepspeed(hw.strategy):
        _check_deepspeed(hw.strategy, accelerator)
    _check_available(accelerator, hw.devices)  # after the settings' own mistakes
    if accelerator == "cpu" and hw.precision.startswith("bf16") and not cpu_has_bf16_units():
        warnings.warn(cpu_bf16_message(hw.precision), stacklevel=2)
    if is_deepspeed(hw.strategy):
        from lightning.fabric.strategies import STRATEGY_REGISTRY

        strategy = STRATEGY_REGISTRY.get(hw.strategy)
        strategy.config.setdefault("gradient_clipping", config.train.max_grad_norm)
    return L.Fabric(
        accelerator=accelerator,
        devices=hw.devices,
        num_nodes=hw.num_nodes,
        strategy=strategy,
        precision=hw.precision,
    )


# what a run's loop supports: one process, DDP's forms, DeepSpeed ZeRO 1 and 2
STRATEGIES = ("auto", "ddp", "ddp_spawn", "ddp_fork", "ddp_find_unused_parameters_true")


def check_strategy(strategy: str) -> None:
    """Name a strategy the run cannot use, and what to use, before Lightning raises."""
    if strategy in STRATEGIES or is_deepspeed(strategy):
        return  # DeepSpeed's own checks follow (_check_deepspeed)
    choices = f"{', '.join(STRATEGIES)}, deepspeed_stage_1 or deepspeed_stage_2"
    if "fsdp" in strategy:
        raise ConfigError(
            f"--strategy {strategy} is not supported: FSDP shards every weight across "
            "processes, and checkpoints, pool snapshots and the KL reference read whole "
            f"weights; use ddp, or deepspeed_stage_2 to shard optimizer state and gradients. "
            f"Strategies a run takes: {choices}."
        )
    import difflib

    close = difflib.get_close_matches(strategy, [*STRATEGIES, "deepspeed_stage_2"], n=1)
    hint = f" Did you mean {close[0]}?" if close else ""
    raise ConfigError(f"--strategy {strategy!r} is not a strategy a run takes: {choices}.{hint}")


def _check_available(accelerator: str, devices: int) -> None:
    """Name a missing device before Lightning raises a traceback about it."""
    if accelerator == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
            raise ConfigError(
                f"--accelerator cuda: this machine shows no CUDA GPU (torch {torch.__version__}, "
                f"{build}); use --accelerator cpu, or auto to take a GPU when there is one."
            )
        if devices > count:
            raise ConfigError(
                f"--devices {devices} asks for {devices} GPUs, but this machine shows {count}; "
                f"pass --devices {count} or fewer."
            )
    if accelerator == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(
            "--accelerator mps: Apple's Metal backend is not available on this machine; "
            "use --accelerator cpu."
        )


def _check_deepspeed(strategy: str, accelerator: str) -> None:
    if accelerator != "cuda":
        raise ConfigError(
            f"hardware.strategy={strategy} runs on CUDA GPUs only, and this run's accelerator "
            f"is {accelerator}; use --strategy ddp for several CPU processes."
        )
    if "stage_3" in strategy:
        raise ConfigError(
            f"hardware.strategy={strategy} is not supported: ZeRO stage 3 shards every weight "
            "across processes, and checkpoints, pool snapshots and the KL reference read "
            "whole weights; use deepspeed_stage_2 (optimizer state and gradients sharded)."
        )
    if importlib.util.find_spec("deepspeed") is None:
        raise ConfigError(
            f"hardware.strategy={strategy} needs the deepspeed package, which is not "
            "installed: pip install 'selfplay-rl[gpu]'."
        )


def is_deepspeed(strategy: str) -> bool:
    return strategy.startswith("deepspeed")


def gradient_clipper(fabric: L.Fabric, strategy: str) -> Any:
    """``clip(module, optimizer, max_norm=)`` returning the norm; NaN where DeepSpeed clips."""
    if not is_deepspeed(strategy):
        return fabric.clip_gradients
    return lambda module, optimizer, max_norm: torch.tensor(float("nan"))


def cpu_has_bf16_units(cpuinfo: str | None = None) -> bool:
    """Whether this CPU multiplies bf16 in hardware: ``amx_bf16`` or ``avx512_bf16`` flags."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
        except OSError:
            return False
    flags = set(cpuinfo.split())
    return bool(flags & {"amx_bf16", "avx512_bf16"})


def cpu_bf16_message(precision: str) -> str:
    return (
        f"--precision {precision} on this CPU: it has no bf16 units (neither amx_bf16 nor "
        "avx512_bf16 in /proc/cpuinfo), so bf16 is emulated and slower than fp32; use "
        "--precision 32-true here, bf16 on a CPU with AMX or AVX512-BF16 or on a GPU."
    )


def thread_split(config: RunConfig) -> tuple[int, int]:
    """(the trainer's torch threads, each local rollout worker's), one place for both.

    Without rollout workers the trainer takes ``threads`` (0: every usable core). With N
    workers the cores this process may use are shared: each worker takes
    ``rollout.worker_threads`` (0: an equal share) and the trainer ``threads`` (0: what is
    left, at least one).
    """
    workers = local_workers(config)
    if not workers:
        return config.threads, 0
    cores = len(usable_cores())
    each = config.rollout.worker_threads or max(1, cores // (workers + 1))
    trainer = config.threads or max(1, cores - each * workers)
    return trainer, each


def local_workers(config: RunConfig) -> int:
    """The local rollout workers a run starts: ``rollout.workers`` for each learner."""
    return config.rollout.workers * max(1, len(config.learners))


def usable_cores() -> list[int]:
    """The CPU cores this process may run on, in order."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def core_split(config: RunConfig) -> tuple[list[int], list[list[int]]] | None:
    """With ``rollout.pin`` and enough cores, disjoint cores for the trainer and for each
    local worker (the trainer's first, then each worker's), so no two of them contend; None
    when they would not fit (then every process may use every core)."""
    workers = local_workers(config)
    if not (workers and config.rollout.pin and hasattr(os, "sched_setaffinity")):
        return None
    trainer, each = thread_split(config)
    cores = usable_cores()
    if trainer + each * workers > len(cores):
        return None
    rest = cores[trainer:]
    return cores[:trainer], [rest[i * each : (i + 1) * each] for i in range(workers)]
