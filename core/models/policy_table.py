"""A language policy's probability of each legal answer: read as a table, or played.

For games small enough to list their information sets (Kuhn poker has 12), exploitability can
be computed exactly, but only of a tabular policy. The model's table is scored, not sampled:
at each information set, the log-probability of the complete answer that plays each legal
action (its text, then end-of-sequence), normalised over the legal actions. Sampling
temperature applies as in generation.

The same scores can choose the moves: ``generation.choice: legal``. A pretrained model that
has never seen a game writes prose where a move belongs (SmolLM2 on Kuhn poker: 97% of
sampled moves invalid), and the forfeits drown the game's signal. Under ``choice: legal`` a
language policy does not write its move token by token. For a request whose game lists every
legal answer (`Game.legal_actions`, with ``lists_every_move``), the policy scores each
complete answer (its text after the answer prefix, then end-of-sequence), reading the
prompt once for all of them (`score_menus`), and samples one in proportion to its
probability, the table's row for that position.
Greedy play takes the most probable answer. Every move is legal by construction.

What the trainer sees is an ordinary completion: the chosen answer's tokens (with the EOS)
and each token's temperature-scaled log-probability under the full vocabulary, the quantity
free sampling records. The update raises or lowers that answer's probability; the choice
renormalises over the legal answers, so the policy trained is the one that plays. A run that
names a game whose moves are not all listed (free-text games, whose ``legal_actions`` are
samples for scripted players) is refused; a request from such a game outside a run (a judge,
a task evaluation) is written freely as before. Randomness follows free sampling's contract:
one draw of the request's generator per request, mixed with the policy's seed, so a match
chooses the same answer whatever shares its batch.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import torch

from selfplay.api.errors import ConfigError
from selfplay.api.game import InfoSet, TabularGame, answer_text
from selfplay.api.policy import Request
from selfplay.api.types import Completion
from selfplay.core.models.prefix_scoring import score_shared
from selfplay.core.models.scoring import eos_id, score

Table = dict[str, dict[str, float]]
CHOICES = ("free", "legal")

#: `score_menus` scores prompts in chunks whose rows times prompt width (the positions of
#: the cache, one copy per row) stay under this: 0.4 GB of float32 cache for SmolLM2-135M.
POSITIONS_PER_CHUNK = 8192


def is_tabular(game: Any) -> bool:
    return isinstance(game, TabularGame)


@torch.no_grad()
def policy_table(
    policy: Any, game: TabularGame, temperature: float = 1.0, roles: Sequence[str] | None = None
) -> Table:
    """``{info set key: {action: probability}}`` of an `HFPolicy` (see the module doc), at
    the information sets of ``roles`` only when given."""
    infos = [i for i in game.information_sets() if roles is None or i.role in roles]
    table: Table = {}
    for role in sorted({info.role for info in infos}):
        mine = [info for info in infos if info.role == role]
        context = policy.role_context(role) if policy.role_context is not None else None
        if context is None:
            table.update(_score_role(policy, game, mine, temperature))
        else:
            with context:
                table.update(_score_role(policy, game, mine, temperature))
    return table


def joint_table(game: TabularGame, players: Mapping[str, Any], temperature: float = 1.0) -> Table:
    """The table of a profile in which each role is played by its own policy (``players``:
    role -> policy), as several learners play a game."""
    table: Table = {}
    for role, policy in players.items():
        table.update(policy_table(policy, game, temperature, roles=[role]))
    return table


def _score_role(policy: Any, game: Any, infos: Sequence[InfoSet], temperature: float) -> Table:
    rng = random.Random(0)  # unused by language policies; a Request needs one
    requests = [
        Request(game, info.state, info.role, tuple(game.observe(info.state, info.role)), rng)
        for info in infos
    ]
    menus = [[answer_text(game, a) for a in info.actions] for info in infos]
    _, logps = score_answers(policy, policy.encode(requests), menus, temperature)
    totals = logps.sum(-1)
    table: Table = {}
    k = 0
    for info in infos:
        n = len(info.actions)
        probs = torch.softmax(totals[k : k + n].double(), dim=0).tolist()
        table[info.key] = dict(zip(info.actions, probs, strict=True))
        k += n
    return table


def score_answers(
    policy: Any,
    prompts: Sequence[Sequence[int]],
    menus: Sequence[Sequence[str]],
    temperature: float,
    shared_prompts: bool = True,
) -> tuple[dict[str, list[int]], torch.Tensor]:
    """Each answer's tokens (text, then EOS), and per-token log-probabilities, one row per
    (prompt, answer) in menu order, zero past each answer's end; no grad. Each prompt is read
    once for all its answers (`score_menus`), or with ``shared_prompts=False`` every
    (prompt, answer) is a row of its own (the same values to float rounding, several times
    slower for long prompts). Equal requests (prompt and menu) are scored once: a Kuhn
    poker iteration's decisions are a dozen information sets."""
    kinds: dict[tuple, int] = {}
    pairs = zip(prompts, menus, strict=True)
    which = [kinds.setdefault((tuple(p), tuple(m)), len(kinds)) for p, m in pairs]
    if len(kinds) < len(which):  # equal requests (the same position and menu) scored once
        first = {kind: i for i, kind in reversed(list(enumerate(which)))}
        order = [first[kind] for kind in range(len(kinds))]
        kind_prompts, kind_menus = [prompts[i] for i in order], [menus[i] for i in order]
        tokens_of, scored = score_answers(
            policy, kind_prompts, kind_menus, temperature, shared_prompts
        )
        starts = [0]
        for i in order:
            starts.append(starts[-1] + len(menus[i]))
        rows = [r for kind in which for r in range(starts[kind], starts[kind + 1])]
        return tokens_of, scored[rows]
    stop = eos_id(policy)
    texts = sorted({answer for menu in menus for answer in menu})
    encoded = policy.tokenizer(texts, add_special_tokens=False)["input_ids"]
    tokens_of = {text: [*ids, stop] for text, ids in zip(texts, encoded, strict=True)}
    model = policy.model
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode(), (policy.forward_context or nullcontext)():
            if shared_prompts:
                answers = [[tokens_of[answer] for answer in menu] for menu in menus]
                logps = score_menus(model, prompts, answers, policy.pad_id, temperature)
                return tokens_of, logps.float().cpu()
            rows_prompt = [p for p, menu in zip(prompts, menus, strict=True) for _ in menu]
            rows_answer = [tokens_of[answer] for menu in menus for answer in menu]
            scored = score(model, rows_prompt, rows_answer, policy.pad_id, temperature, False)
    finally:
        model.train(was_training)
    return tokens_of, (scored.logp.float() * scored.mask).cpu()


# ---- generation.choice=legal -----------------------------------------------------------------


def legal_answers(request: Request) -> list[str]:
    """The completions that play each legal move (after the answer prefix); [] when the game
    does not list every move (its ``legal_actions`` are samples for scripted players). A request
    that lists its own answers (``Request.menu``: a judge's verdict lines) offers those."""
    if request.menu:
        return list(request.menu)
    game = request.game  # None for a chat request to `selfplay serve`: written freely
    if not getattr(game, "lists_every_move", False):
        return []
    return [game.continuation(text) for text in game.legal_actions(request.state, request.role)]


def check_choice(choice: str, game: Any) -> None:
    """``choice=legal`` needs a game that lists every legal move; say so before any work."""
    if choice == "legal" and not game.lists_every_move:
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
    """Requests whose game lists every legal answer choose one (under ``choice=legal``), as do
    requests that list their own answers; the others are written."""
    legal = getattr(policy, "choice", "legal") == "legal"
    menus = [legal_answers(req) if legal else list(req.menu) for req in requests]
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


def _choose(
    policy: Any,
    menus: Sequence[Sequence[str]],
    prompts: Sequence[Sequence[int]],
    seeds: Sequence[int],
    *,
    greedy: bool,
) -> list[Completion]:
    """One completion per prompt, each one of its (non-empty) menu's answers."""
    shared = getattr(policy, "share_prefix", True)
    tokens_of, logps = score_answers(policy, prompts, menus, policy.temperature, shared)
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
                menu=tuple(menu),
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


@torch.inference_mode()
def score_menus(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    answers: Sequence[Sequence[Sequence[int]]],
    pad_id: int,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Per-token log-probabilities of each prompt's answers: one row per (prompt, answer) in
    order, zero past each answer's end (the second value of `score_answers`'s contract),
    in chunks of prompts whose cache copies fit `POSITIONS_PER_CHUNK`."""
    width = max(len(a) for menu in answers for a in menu)
    parts = []
    for chunk in _chunks([len(p) for p in prompts], [len(m) for m in answers]):
        rows_prompt = [prompts[i] for i in chunk for _ in answers[i]]
        rows_answer = [a for i in chunk for a in answers[i]]
        scored = score_shared(model, rows_prompt, rows_answer, pad_id, temperature, False)
        part = scored.logp.new_zeros(len(rows_answer), width)
        part[:, : scored.logp.shape[1]] = scored.logp.float() * scored.mask
        parts.append(part)
    return torch.cat(parts).cpu()


def _chunks(lengths: Sequence[int], sizes: Sequence[int]) -> Iterator[list[int]]:
    chunk: list[int] = []
    longest = rows = 0
    for i, (n, size) in enumerate(zip(lengths, sizes, strict=True)):
        if chunk and max(longest, n) * (rows + size) > POSITIONS_PER_CHUNK:
            yield chunk
            chunk, longest, rows = [], 0, 0
        chunk.append(i)
        longest, rows = max(longest, n), rows + size
    if chunk:
        yield chunk
