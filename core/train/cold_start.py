"""Cold start: supervised warm-up on transcripts of the game's scripted players.

Why: a random-init model almost never writes a legal answer, so self-play from scratch spends
its first thousands of matches on forfeits and learns nothing about the game. A short
supervised phase on what the scripted players answer (``[4]``, ``[check]``) teaches the answer
format, the stop token and legality first; with the digit board, a 60 s cold start took the
tiny model from ~100% to 0% invalid tic-tac-toe moves.

What the model is trained on is exactly what it sees and writes when it plays: the prompt ids
come from the policy's own `HFPolicy.encode`, the target is the answer's tokens followed by
the EOS the policy stops at, and the loss is taken on the target tokens only. Rows are
right-padded, so every real token keeps the position it has at play time (0, 1, 2, ...).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from selfplay.api.game import Game
from selfplay.api.policy import Policy, Request, ScriptedPolicy, has_player
from selfplay.api.types import Message, Role
from selfplay.core.models.hf_policy import HFPolicy
from selfplay.core.models.scoring import eos_id
from selfplay.core.rollout import play

Transcript = tuple[tuple[Message, ...], str]
IGNORE = -100  # label of a position the loss skips (prompt and padding)
# Scripted matches are played at most this many at a time until there are enough examples.
MATCHES_PER_ROUND = 512
# Distinct examples kept at most; longer cold starts revisit them in fresh shuffled orders.
MAX_DISTINCT_EXAMPLES = 50_000
# Logits a forward pass of the step may hold (rows x positions x vocabulary): 256 MB of float32.
# A batch over it is split into micro-batches whose gradients add up to the batch's: SmolLM2's
# 49k vocabulary made one 64-row batch of Kuhn poker hold over 20 GB; the tiny model's batches
# stay whole.
MAX_STEP_LOGITS = 1 << 26


@dataclass(frozen=True)
class ColdStartReport:
    """What a cold start did; ``last_loss`` averages the last ten steps (one batch is noisy)."""

    steps: int
    examples: int  # distinct (prompt, answer) examples trained on
    matches: int  # scripted matches played to produce them
    first_loss: float
    last_loss: float
    seconds: float

    def __str__(self) -> str:
        return (
            f"{self.steps} steps on {self.examples} examples from {self.matches} matches, "
            f"loss {self.first_loss:.3f} -> {self.last_loss:.3f}, {self.seconds:.0f} s"
        )


@dataclass(frozen=True)
class Example:
    """One training row: prompt ids as the policy encodes them, then answer ids and EOS."""

    prompt_ids: tuple[int, ...]
    target_ids: tuple[int, ...]


def scripted_transcripts(
    game: Game,
    players: Sequence[str],
    matches: int,
    seed: int,
    roles: Sequence[Role] | None = None,
) -> list[Transcript]:
    """(prompt messages, answer text) of every valid turn in ``matches`` scripted matches
    (of ``roles`` only, when given: a learner of its own copies the roles it plays).

    Each seat of each match is held by a player drawn from ``players`` with an RNG seeded from
    ``seed``, so a mix such as ``("random", "nash")`` also yields mixed pairings.
    """
    _check_players(game, players)
    if matches < 1:
        return []
    rng = random.Random(f"cold-start-{seed}")
    policies = {name: ScriptedPolicy(name) for name in players}
    seatings: list[dict[Role, Policy]] = [
        {role: policies[rng.choice(list(players))] for role in game.roles} for _ in range(matches)
    ]
    seeds = [rng.getrandbits(48) for _ in range(matches)]
    episodes = play(game, seatings, seeds)
    return [
        (turn.prompt, turn.text)
        for ep in episodes
        for turn in ep.turns
        if turn.valid and (roles is None or turn.role in roles)
    ]


def build_examples(
    policy: HFPolicy, game: Game, transcripts: Sequence[Transcript]
) -> list[Example]:
    """Training rows for ``transcripts``: the exact prompt ids the policy acts on, answer, EOS.

    A row longer than the model's context keeps the tail of its prompt (the answer must fit);
    that only happens for long prompts with long answers (negotiation on the tiny model).
    """
    if not transcripts:
        return []
    prompts = _encode_prompts(policy, game, [messages for messages, _ in transcripts])
    answers = policy.tokenizer(
        [text for _, text in transcripts], add_special_tokens=False, return_attention_mask=False
    )["input_ids"]
    eos = eos_id(policy)
    context = getattr(policy.model.config, "max_position_embeddings", None) or 1 << 30
    examples = []
    for prompt, answer in zip(prompts, answers, strict=True):
        target = (*answer, eos)
        keep = max(1, context - len(target))
        examples.append(Example(tuple(prompt[-keep:]), target))
    return examples


def collate(examples: Sequence[Example], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (target tokens only)."""
    width = max(len(e.prompt_ids) + len(e.target_ids) for e in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    for row, example in enumerate(examples):
        n_prompt = len(example.prompt_ids)
        n = n_prompt + len(example.target_ids)
        ids[row, :n] = torch.tensor(example.prompt_ids + example.target_ids)
        mask[row, :n] = 1
        labels[row, n_prompt:n] = torch.tensor(example.target_ids)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def vocabulary(model: torch.nn.Module) -> int:
    """The width of the model's logits."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return int(getattr(head, "out_features", 0) or model.config.vocab_size)


def micro_batches(examples: Sequence[Example], vocab: int) -> list[list[Example]]:
    """``examples`` in order, in parts whose logits fit MAX_STEP_LOGITS (one part if all fit)."""
    width = max(len(e.prompt_ids) + len(e.target_ids) for e in examples)
    rows = max(1, MAX_STEP_LOGITS // (width * vocab))
    return [list(examples[i : i + rows]) for i in range(0, len(examples), rows)]


def target_loss(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy of the target tokens, each predicted from the tokens before it."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    predicted = logits[:, :-1].float()
    labels = batch["labels"][:, 1:]
    return torch.nn.functional.cross_entropy(
        predicted.reshape(-1, predicted.shape[-1]), labels.reshape(-1), ignore_index=IGNORE
    )


def warm_up(
    policy: HFPolicy,
    game: Game,
    config: Any,
    say: Callable[[str], None],
    ticker: Callable[[str, int], Any] | None = None,
    roles: Sequence[Role] | None = None,
) -> None:
    """The run's cold start as its config asks, reported through ``say``.

    Games without scripted players (language games) have nothing to copy and skip it. The
    steps are shown by ``ticker(label, steps)``, a context manager with ``advance(n, text)``
    (the run's progress bar, core/run/progress.py); without one, only the first and last
    lines are said.
    """
    cs = config.cold_start
    if not cs.steps:
        return
    if not game.players:
        say(f"cold start: skipped, {game.name} has no scripted players to copy")
        return
    say(f"cold start: {cs.steps} supervised steps on transcripts of {', '.join(cs.players)} ...")
    with (ticker or _Silent)("cold start", cs.steps) as shown:
        report = cold_start(
            policy,
            game,
            cs.steps,
            players=cs.players,
            batch_size=cs.batch_size,
            lr=cs.lr,
            seed=config.seed,
            log=lambda step, loss: shown.advance(1, f"loss {loss:.3f}"),
            roles=roles,
        )
    say(f"cold start: {report}")


class _Silent:
    """A ticker that shows nothing."""

    def __init__(self, label: str, total: int) -> None:
        pass

    def __enter__(self) -> _Silent:
        return self

    def advance(self, steps: int = 1, status: str = "") -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


def cold_start(
    policy: HFPolicy,
    game: Game,
    steps: int,
    *,
    players: Sequence[str] = ("random",),
    batch_size: int = 64,
    lr: float = 5e-4,
    seed: int = 0,
    max_grad_norm: float | None = 1.0,
    log: Callable[[int, float], None] | None = None,
    roles: Sequence[Role] | None = None,
) -> ColdStartReport:
    """Train ``policy.model`` for ``steps`` AdamW steps on scripted transcripts of ``game``.

    The gradient norm is clipped to ``max_grad_norm`` (None: not clipped): without it the
    loss spiked back up just as the tiny model began to copy legal cells.
    ``log(step, loss)`` is called after every step. The model is left in eval mode.
    """
    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be at least 1, got {steps}, {batch_size}.")
    start = time.perf_counter()
    examples, matches = _gather_examples(policy, game, players, steps * batch_size, seed, roles)
    optimizer = torch.optim.AdamW(
        [p for p in policy.model.parameters() if p.requires_grad],
        lr=lr,
        weight_decay=0.0,
        foreach=True,  # as the update's optimiser (core/run/model_setup.py)
    )
    batches = _shuffled_batches(examples, batch_size, seed)
    policy.model.train()
    try:
        losses = [
            _step(policy, optimizer, next(batches), max_grad_norm, step, log)
            for step in range(1, steps + 1)
        ]
    finally:
        policy.model.eval()
    tail = losses[-10:]
    return ColdStartReport(
        steps=steps,
        examples=len(examples),
        matches=matches,
        first_loss=losses[0],
        last_loss=sum(tail) / len(tail),
        seconds=time.perf_counter() - start,
    )


def _step(
    policy: HFPolicy,
    optimizer: torch.optim.Optimizer,
    examples: Sequence[Example],
    max_grad_norm: float | None,
    step: int,
    log: Callable[[int, float], None] | None,
) -> float:
    """One optimiser step on one batch; returns its loss."""
    optimizer.zero_grad(set_to_none=True)
    loss = backward(policy, examples, step)
    if max_grad_norm is not None:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    optimizer.step()
    if log is not None:
        log(step, loss)
    return loss


def backward(policy: HFPolicy, examples: Sequence[Example], step: int = 1) -> float:
    """The batch's loss (the mean over its target tokens), its gradient added to the model's."""
    model = policy.model
    parts = micro_batches(examples, vocabulary(model))
    targets = sum(len(e.target_ids) for e in examples)
    loss = torch.zeros(())
    for part in parts:  # one part unless the logits would outgrow MAX_STEP_LOGITS
        batch = {k: v.to(model.device) for k, v in collate(part, policy.pad_id).items()}
        part_loss = target_loss(model, batch)
        if not torch.isfinite(part_loss):
            raise FloatingPointError(
                f"Cold-start loss became {part_loss.item()} at step {step}; lower the "
                "learning rate."
            )
        if len(parts) > 1:  # the batch's mean over target tokens, a part's share at a time
            part_loss = part_loss * (sum(len(e.target_ids) for e in part) / targets)
        part_loss.backward()
        loss = loss + part_loss.detach().cpu()
    return loss.item()


def _gather_examples(
    policy: HFPolicy,
    game: Game,
    players: Sequence[str],
    wanted: int,
    seed: int,
    roles: Sequence[Role] | None = None,
) -> tuple[list[Example], int]:
    """At least ``wanted`` examples (up to MAX_DISTINCT_EXAMPLES) and the matches played."""
    wanted = min(wanted, MAX_DISTINCT_EXAMPLES)
    per_round = min(MATCHES_PER_ROUND, max(8, wanted // 4))  # a match has >= 1 valid turn
    examples: list[Example] = []
    matches = 0
    for round_ in range(math.ceil(MAX_DISTINCT_EXAMPLES / per_round)):
        transcripts = scripted_transcripts(
            game, players, per_round, seed=seed * 1_000_003 + round_, roles=roles
        )
        examples.extend(build_examples(policy, game, transcripts))
        matches += per_round
        if not transcripts or len(examples) >= wanted:
            break
    if not examples:
        raise ValueError(
            f"The scripted players {list(players)} of game {game.name!r} made no valid move in "
            f"{matches} matches, so there is nothing to cold-start on."
        )
    return examples, matches


def _shuffled_batches(
    examples: Sequence[Example], batch_size: int, seed: int
) -> Iterator[list[Example]]:
    """Endless batches: each pass over the examples in a fresh order from a private generator."""
    generator = torch.Generator().manual_seed(seed)
    pending: list[int] = []
    while True:
        while len(pending) < batch_size:
            pending.extend(torch.randperm(len(examples), generator=generator).tolist())
        batch, pending = pending[:batch_size], pending[batch_size:]
        yield [examples[i] for i in batch]


def _encode_prompts(
    policy: HFPolicy, game: Game, prompts: Sequence[tuple[Message, ...]]
) -> list[list[int]]:
    """Prompt ids through `HFPolicy.encode` itself, so they match play time token for token.

    ``encode`` reads only a request's messages; the state, role and RNG here are placeholders.
    """
    state = game.reset(0)
    rng = random.Random(0)
    requests = [Request(game, state, game.roles[0], messages, rng) for messages in prompts]
    return policy.encode(requests)


def _check_players(game: Game, players: Sequence[str]) -> None:
    unknown = [name for name in players if not has_player(game, name)]
    if not players or unknown:
        known = ", ".join(sorted(game.players)) or "none"
        raise ValueError(
            f"Cold start needs scripted players of game {game.name!r}; got {list(players)}, "
            f"its players are: {known}."
        )
