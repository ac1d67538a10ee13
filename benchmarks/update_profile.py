"""Where the update's time goes: our side of the peer race (benchmarks/peer_trl.py), timed by part.

Runs ``selfplay``'s loop on the race task (one-digit addition, 32 prompts x 8 completions,
4 new tokens, the tiny GPT-2 with the character tokenizer) and wraps the functions an
iteration calls after its matches in wall-clock timers: the update (scoring forward, backward,
AdamW, gradient clipping, packing the rows), the work around it that ``update_seconds``
also counts (the episodes' records, the samples) and the run's writing of the episodes
after the iteration. Prints milliseconds per
iteration, largest first; timers nest (``update`` holds ``score`` and ``backward``), so the
rows do not add up. With ``--ops``, one update (the third) also runs under torch.profiler and
its operators are printed by self time.

``--all`` times the rest of an iteration too: the matches (the prompts' chat template and
tokenizing, the decode loop and its parts, the game's rules per match, the episodes built),
the iteration's bookkeeping and the run's work after it (writing the episodes, the trackers).
``--raw`` times the race's raw loop instead (generate, forward, backward, clipping, AdamW),
the yardstick for the same parts. ``--cpu`` reads the main thread's CPU time instead of the
wall clock: on a shared machine, with ``--threads 1``, that is what the code costs whatever
else runs.

    python benchmarks/update_profile.py [--steps 20] [--threads 1] [--ops]
    python benchmarks/update_profile.py --all --cpu --steps 15 --threads 1   # and --raw
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_trl  # the race's task and model, from beside this file

from selfplay.core.models import scoring
from selfplay.core.run.folder import run_folder
from selfplay.core.train import loop
from selfplay.core.train.update import updater as update_module

CLOCKS: Counter[str] = Counter()
CLOCK = [time.perf_counter]  # time.thread_time under --cpu


def timed(owner: Any, name: str, label: str | None = None) -> None:
    """Replace ``owner.name`` by the same function adding its wall time to ``CLOCKS``."""
    function = getattr(owner, name)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = CLOCK[0]()
        try:
            return function(*args, **kwargs)
        finally:
            CLOCKS[label or name] += CLOCK[0]() - start

    setattr(owner, name, wrapper)


def profile_one_update(calls: list[int]) -> None:
    """The third update runs under torch.profiler; its operator table is printed."""
    update = update_module.Updater.update

    def profiled(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] != 3:
            return update(self, *args, **kwargs)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            out = update(self, *args, **kwargs)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
        return out

    update_module.Updater.update = profiled


def time_the_iteration() -> None:
    """``--all``: the matches, the iteration's bookkeeping and the run's work after it."""
    from selfplay.core import reward_pipeline, rollout
    from selfplay.core.machine import memory
    from selfplay.core.models import hf_policy, sampling
    from selfplay.core.run.duties import records
    from selfplay.core.train import rollouts

    timed(rollouts.Rollouts, "take", "matches (rollout_seconds)")
    timed(hf_policy.HFPolicy, "encode", "chat template + tokenize")
    timed(hf_policy.HFPolicy, "generate", "decode loop")
    timed(hf_policy.HFPolicy, "_prefill", "prefill")
    timed(sampling.RowNoise, "gumbel", "sampling noise")
    timed(rollout, "_start", "game: reset, match rng")
    timed(rollout, "_advance", "game: judge, turn")
    timed(rollout, "_finish", "game: episode")
    timed(reward_pipeline.RewardPipeline, "__call__", "rewards")
    timed(loop.Iteration, "_train", "the learner's update")
    timed(memory.Heap, "release", "malloc_trim checks")
    timed(records.MetricsLog, "on_iteration_end", "trackers")


def time_the_raw_loop() -> None:
    from transformers import GPT2LMHeadModel

    forward, generating = GPT2LMHeadModel.forward, [False]

    def update_forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        """The update's forward pass, timed; generate's own are left to its timer."""
        if generating[0]:
            return forward(self, *args, **kwargs)
        start = CLOCK[0]()
        try:
            return forward(self, *args, **kwargs)
        finally:
            CLOCKS["forward"] += CLOCK[0]() - start

    def marked(self: Any, *args: Any, **kwargs: Any) -> Any:
        generating[0] = True
        try:
            return generate(self, *args, **kwargs)
        finally:
            generating[0] = False

    GPT2LMHeadModel.forward = update_forward
    generate = GPT2LMHeadModel.generate
    GPT2LMHeadModel.generate = marked
    timed(GPT2LMHeadModel, "generate")
    timed(torch.Tensor, "backward")
    timed(torch.optim.AdamW, "step", "adamw step")
    timed(torch.nn.utils, "clip_grad_norm_", "clip grad norm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ops", action="store_true", help="torch.profiler table of one update")
    parser.add_argument("--all", action="store_true", help="the whole iteration, not the update")
    parser.add_argument("--raw", action="store_true", help="the race's raw loop instead of ours")
    parser.add_argument("--cpu", action="store_true", help="the main thread's CPU time")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.cpu:
        CLOCK[0] = time.thread_time
    if args.raw:
        time_the_raw_loop()
        return report(args, peer_trl.run_raw)
    if args.ops:
        profile_one_update([0])
    if args.all:
        time_the_iteration()
    timed(update_module.Updater, "update")
    timed(update_module, "score")
    timed(scoring, "pack")
    timed(torch.Tensor, "backward")
    timed(torch.optim.AdamW, "step", "adamw step")
    timed(torch.nn.utils, "clip_grad_norm_", "clip grad norm")
    timed(run_folder.RunFolder, "append_episodes", "write episodes")
    timed(loop, "recorded", "episode records")
    timed(loop, "episode_samples", "samples")
    report(args, peer_trl.run_ours)


def report(args: argparse.Namespace, run: Any) -> None:
    with tempfile.TemporaryDirectory(prefix="update-profile-") as folder:
        peer_trl.build_model(Path(folder), seed=0)
        race = argparse.Namespace(
            model=Path(folder),
            steps=args.steps,
            threads=args.threads,
            precision="32-true",
            seed=0,
            side="ours",
        )
        result = run(race)
    per_step = 1000 / args.steps
    print(
        f"{args.steps} iterations, {args.threads} thread(s): update_seconds "
        f"{result['update_seconds'] * per_step:.1f} ms, rollout "
        f"{result['generation_seconds'] * per_step:.1f} ms per iteration (wall clock); "
        f"timers: {'CPU time of the main thread' if args.cpu else 'wall clock'}"
    )
    for name, seconds in CLOCKS.most_common():
        print(f"{name:>26}: {seconds * per_step:7.1f} ms per iteration")


if __name__ == "__main__":
    main()
