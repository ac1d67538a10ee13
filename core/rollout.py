"""The rollout engine: many matches in lock-step, one batched call per policy per tick.

Why lock-step: generation is the cost of self-play, and a language model completes 64 prompts
in little more time than one. So at every tick the engine asks each unfinished match who is
to act, groups the waiting seats by the policy object that holds them (the same learner may
hold both roles of one match and sit in every match), and calls each policy once with all of
its requests. Scripted players and mocks answer the same call.

Determinism: match ``i`` starts from ``game.reset(seeds[i])`` and owns a ``random.Random``
derived from its seed, handed to its policies in every request; scripted players draw from
it and `HFPolicy` seeds its sampling noise from it. A match with scripted players therefore
replays exactly from its seed, whatever else was played beside it.

This module must not import Lightning: it runs in evaluation and ``selfplay play`` too.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from selfplay.api.game import Game, GameState
from selfplay.api.policy import Policy, Request
from selfplay.api.types import Completion, Episode, Role, Turn

__all__ = ["match_rng", "play", "seatings_for"]


@dataclass(slots=True)
class _Match:
    """One match in progress: its seat holders, current state, own RNG and turns so far."""

    seed: int
    seating: Mapping[Role, Policy]
    state: GameState
    rng: random.Random
    turns: list[Turn] = field(default_factory=list)


def match_rng(seed: int) -> random.Random:
    """The players' RNG for a match: derived from, but not equal to, the game's chance RNG."""
    return random.Random(f"selfplay-players-{seed}")


def play(
    game: Game,
    seatings: Sequence[Mapping[Role, Policy]],
    seeds: Sequence[int],
    *,
    greedy: bool = False,
    starts: Sequence[GameState] | None = None,
) -> list[Episode]:
    """Play ``len(seeds)`` matches to the end; match ``i`` is seated by ``seatings[i]``.

    Match ``i`` starts from ``game.reset(seeds[i])``, or from ``starts[i]`` when given (a
    task set up part-way, e.g. a bank problem handed straight to the solver).
    """
    if len(seatings) != len(seeds) or (starts is not None and len(starts) != len(seeds)):
        raise ValueError(
            f"play() got {len(seatings)} seatings for {len(seeds)} seeds; pass one each "
            "(and one start state each when starts are given)."
        )
    firsts = starts if starts is not None else [None] * len(seeds)
    matches = [
        _start(game, seating, seed, first)
        for seating, seed, first in zip(seatings, seeds, firsts, strict=True)
    ]
    waiting = matches
    while waiting:
        groups: dict[int, tuple[Policy, list[tuple[_Match, Role]]]] = {}
        acting = []
        for match in waiting:
            role = game.to_act(match.state)
            if role is not None:
                policy = match.seating[role]
                groups.setdefault(id(policy), (policy, []))[1].append((match, role))
                acting.append(match)
        for policy, seats in groups.values():
            _play_tick(game, policy, seats, greedy)
        waiting = acting
    return [_finish(game, match) for match in matches]


def _start(
    game: Game, seating: Mapping[Role, Policy], seed: int, first: GameState | None
) -> _Match:
    missing = [role for role in game.roles if role not in seating]
    if missing:
        raise ValueError(
            f"Match with seed {seed} has no policy for role(s) {missing} of game {game.name!r}; "
            f"a seating maps every role in {list(game.roles)} to a policy."
        )
    state = game.reset(seed) if first is None else first
    return _Match(seed=seed, seating=seating, state=state, rng=match_rng(seed))


def _play_tick(game: Game, policy: Policy, seats: list[tuple[_Match, Role]], greedy: bool) -> None:
    """One batched call to ``policy`` for all of its waiting seats, then one step each."""
    requests = [
        Request(game, match.state, role, tuple(game.observe(match.state, role)), match.rng)
        for match, role in seats
    ]
    completions = policy.act(requests, greedy=greedy)
    if len(completions) != len(requests):
        raise RuntimeError(
            f"Policy {policy.name!r} returned {len(completions)} completions for "
            f"{len(requests)} requests; act() must answer every request, in order."
        )
    for (match, _), request, completion in zip(seats, requests, completions, strict=True):
        match.turns.append(_advance(game, match, request, completion, policy.name))


def _advance(
    game: Game, match: _Match, request: Request, completion: Completion, seat: str
) -> Turn:
    """Step the match with the completion and record the turn (the text is parsed once)."""
    match.state, action = game.judge(match.state, request.role, completion.text)
    valid = action is not None
    return Turn(
        role=request.role,
        seat=seat,
        prompt=request.messages,
        text=completion.text,
        action=action,
        valid=valid,
        reason=None if valid else match.state.error,
        token_ids=completion.token_ids,
        logprobs=completion.logprobs,
        prompt_ids=completion.prompt_ids,
    )


def _finish(game: Game, match: _Match) -> Episode:
    outcome = game.outcome(match.state)
    if outcome is None:
        raise RuntimeError(
            f"Game {game.name!r} has no role to act but no outcome (seed {match.seed}); "
            "its current_role() and result() disagree about whether the match is over."
        )
    return Episode(
        game=game.name,
        seed=match.seed,
        seats={role: policy.name for role, policy in match.seating.items()},
        turns=tuple(match.turns),
        outcome=outcome,
        signals=game.signals(match.state),
        options=game.options.model_dump(mode="json"),
        state=match.state.model_dump(mode="json"),
        extra={"rules": game.rules.model_dump(mode="json")},
    )


def seatings_for(game: Game, learner: Policy, opponent: Policy, n: int) -> list[dict[Role, Policy]]:
    """``n`` seatings for a two-sided evaluation: the learner takes each role in turn.

    Match ``i`` gives the learner role ``game.roles[i % len(roles)]`` and the opponent every
    other role, so first-mover advantage cancels out over a batch.
    """
    roles = game.roles
    return [
        {role: (learner if role == roles[i % len(roles)] else opponent) for role in roles}
        for i in range(n)
    ]
