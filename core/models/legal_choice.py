"""Choosing among the legal answers: ``generation.choice: legal``.

A pretrained model that has never seen a game writes prose where a move belongs (SmolLM2 on
Kuhn poker: 97% of sampled moves invalid), and the forfeits drown the game's signal. Under
``choice: legal`` a language policy does not write its move token by token. For a request
whose game lists every legal answer (`Game.legal_actions`, with ``lists_every_move``), the
policy scores each complete answer (its text after the answer prefix, then end-of-sequence)
with one forward pass, and samples one in proportion to the answer's probability: a softmax
over the answers' summed log-probabilities at the sampling temperature, the same table
`policy_table` reads for exploitability. Greedy play takes the most probable answer. Every
move is legal by construction.

What the trainer sees is an ordinary completion: the chosen answer's tokens (with the EOS)
and each token's temperature-scaled log-probability under the full vocabulary, the quantity
free sampling records. The update raises or lowers that answer's probability; the choice
renormalises over the legal answers, so the policy trained is the one that plays. A run that
names a game whose moves are not all listed (free-text games, whose ``legal_actions`` are
samples for scripted players) is refused; a request from such a game outside a run (a judge,
a task evaluation) is written freely as before.

Randomness follows free sampling's contract: one draw of the request's generator per request,
mixed with the policy's seed, so a match chooses the same answer whatever shares its batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import torch

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Request
from selfplay.api.types import Completion
from selfplay.core.models.scoring import score

CHOICES = ("free", "legal")


def legal_answers(request: Request) -> list[str]:
    """The completions that play each legal move (after the answer prefix); [] when the game
    does not list every move (its ``legal_actions`` are samples for scripted players)."""
    game = request.game
    if not getattr(game, "lists_every_move", False):
        return []
    return [game.continuation(text) for text in game.legal_actions(request.state, request.role)]


def check_choice(choice: str, game: Any) -> None:
    """``choice=legal`` needs a game that lists every legal move; say so before any work."""
    if choice == "legal" and not getattr(game, "lists_every_move", False):
        raise ConfigError(
            f"generation.choice=legal needs a game that lists every legal move "
            f"(tictactoe, kuhn-poker, rock-paper-scissors); {game.name} lists only samples "
            "for its scripted players, so its answers must be written. Use "
            "generation.choice=free with it."
        )


def choose_legal(
    policy: Any,
    requests: Sequence[Request],
    prompts: Sequence[Sequence[int]],
    seeds: Sequence[int],
    *,
    greedy: bool,
) -> list[Completion]:
    """Requests whose game lists legal answers choose one; the others are written freely."""
    menus = [legal_answers(req) for req in requests]
    listed = [i for i, menu in enumerate(menus) if menu]
    free = [i for i, menu in enumerate(menus) if not menu]
    out: list[Completion] = [Completion(text="")] * len(requests)
    if listed:
        chosen = _choose(
            policy,
            [menus[i] for i in listed],
            [prompts[i] for i in listed],
            [seeds[i] for i in listed],
            greedy=greedy,
        )
        for i, completion in zip(listed, chosen, strict=True):
            out[i] = completion
    if free:
        written = policy.write([prompts[i] for i in free], [seeds[i] for i in free], greedy)
        for i, completion in zip(free, written, strict=True):
            out[i] = completion
    return out


@torch.inference_mode()
def _choose(
    policy: Any,
    menus: Sequence[Sequence[str]],
    prompts: Sequence[Sequence[int]],
    seeds: Sequence[int],
    *,
    greedy: bool,
) -> list[Completion]:
    """One completion per prompt, each one of its (non-empty) menu's answers."""
    from selfplay.core.train.cold_start import eos_id  # cold_start imports the policy

    stop = eos_id(policy)
    texts = sorted({answer for menu in menus for answer in menu})
    encoded = policy.tokenizer(texts, add_special_tokens=False)["input_ids"]
    tokens_of = {text: [*ids, stop] for text, ids in zip(texts, encoded, strict=True)}
    rows_prompt = [prompt for prompt, menu in zip(prompts, menus, strict=True) for _ in menu]
    rows_answer = [tokens_of[answer] for menu in menus for answer in menu]
    model = policy.model
    was_training = model.training
    model.eval()
    try:
        with policy.forward_context() if policy.forward_context else nullcontext():
            scored = score(
                model, rows_prompt, rows_answer, policy.pad_id, policy.temperature, False
            )
    finally:
        model.train(was_training)
    logps = (scored.logp.float() * scored.mask).cpu()
    totals = logps.sum(-1)
    completions, k = [], 0
    for prompt, menu, seed in zip(prompts, menus, seeds, strict=True):
        pick = _pick(totals[k : k + len(menu)], seed, greedy)
        answer = tokens_of[menu[pick]]
        completions.append(
            Completion(
                text=menu[pick],
                token_ids=tuple(answer),
                logprobs=tuple(logps[k + pick, : len(answer)].tolist()),
                prompt_ids=tuple(prompt),
            )
        )
        k += len(menu)
    return completions


def _pick(totals: torch.Tensor, seed: int, greedy: bool) -> int:
    """Argmax, or a Gumbel-max sample of softmax(totals) from the row's own generator."""
    if greedy or len(totals) == 1:
        return int(totals.argmax())
    uniform = torch.rand(len(totals), generator=torch.Generator().manual_seed(int(seed)))
    tiny = torch.finfo(uniform.dtype).tiny
    return int((totals - torch.log(-torch.log(uniform.clamp(min=tiny)))).argmax())
