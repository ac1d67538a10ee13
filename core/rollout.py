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

Faulty rules: a game is plug-in code, and a rule that raises must not take the other matches
with it. Given an ``errors`` list, the engine voids such a match (it is left out of the
result, and a `VoidMatch` naming the game, seed, turn, role and error is appended to the
list) and plays on; without one, it raises a `PluginFault` naming the same. In training,
`voided` counts an iteration's voided matches and stops the run when most of them were.

This module must not import Lightning: it runs in evaluation and ``selfplay play`` too.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from selfplay.api.errors import PluginFault, describe
from selfplay.api.game import Game, GameState
from selfplay.api.policy import Policy, Request
from selfplay.api.types import Completion, Episode, Role, Turn

__all__ = ["VoidMatch", "match_rng", "play", "seatings_for"]


@dataclass(frozen=True)
class VoidMatch:
    """A match voided because the game's own code raised; written to episodes.jsonl."""

    game: str
    seed: int
    turn: int  # turns played before the error
    role: Role | None
    call: str  # the game method that raised
    error: str  # the error and the line that raised it

    def sentence(self) -> str:
        who = f", role {self.role}" if self.role else ""
        return (
            f"game {self.game!r} raised {self.error} in {self.call}() "
            f"(seed {self.seed}, turn {self.turn}{who})"
        )

    def to_json(self) -> str:
        return json.dumps({"void": True, **asdict(self)}, ensure_ascii=False)


@dataclass(slots=True)
class _Match:
    """One match in progress: its seat holders, current state, own RNG and turns so far."""

    seed: int
    seating: Mapping[Role, Policy]
    state: Any  # a GameState; None when reset() raised
    rng: random.Random
    turns: list[Turn] = field(default_factory=list)
    void: VoidMatch | None = None


def _rules(
    game: Game,
    match: _Match,
    errors: list[VoidMatch] | None,
    role: Role | None,
    call: Callable[..., Any],
    *args: Any,
) -> Any:
    """``call(*args)``, a method of the game; if it raises, the match is void (see above)."""
    try:
        return call(*args)
    except Exception as err:
        name = getattr(call, "__name__", "rules").lstrip("_")
        void = VoidMatch(game.name, match.seed, len(match.turns), role, name, describe(err))
        if errors is None:
            raise PluginFault(f"The {void.sentence()}.") from err
        match.void = void
        errors.append(void)
        return None


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
    errors: list[VoidMatch] | None = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> list[Episode]:
    """Play ``len(seeds)`` matches to the end; match ``i`` is seated by ``seatings[i]``.

    Match ``i`` starts from ``game.reset(seeds[i])``, or from ``starts[i]`` when given (a
    task set up part-way, e.g. a bank problem handed straight to the solver). With
    ``errors``, a match whose rules raise is voided: left out, and recorded in ``errors``.
    ``progress(done, total, rounds)`` hears, after every round of moves (one move per match
    still playing), how many matches are over and how many rounds were played.
    """
    if len(seatings) != len(seeds) or (starts is not None and len(starts) != len(seeds)):
        raise ValueError(
            f"play() got {len(seatings)} seatings for {len(seeds)} seeds; pass one each "
            "(and one start state each when starts are given)."
        )
    firsts = starts if starts is not None else [None] * len(seeds)
    matches = [
        _start(game, seating, seed, first, errors)
        for seating, seed, first in zip(seatings, seeds, firsts, strict=True)
    ]
    waiting = [match for match in matches if match.void is None]
    rounds = 0
    while waiting:
        groups: dict[int, tuple[Policy, list[tuple[_Match, Role]]]] = {}
        acting = []
        for match in waiting:
            role = _rules(game, match, errors, None, game.to_act, match.state)
            if role is not None:
                policy = match.seating[role]
                groups.setdefault(id(policy), (policy, []))[1].append((match, role))
                acting.append(match)
        for policy, seats in groups.values():
            _play_tick(game, policy, seats, greedy, errors)
        waiting = [match for match in acting if match.void is None]
        rounds += 1
        if progress is not None:
            progress(len(matches) - len(waiting), len(matches), rounds)
    finished = [_finish(game, match, errors) for match in matches if match.void is None]
    return [episode for episode in finished if episode is not None]


def _start(
    game: Game,
    seating: Mapping[Role, Policy],
    seed: int,
    first: GameState | None,
    errors: list[VoidMatch] | None,
) -> _Match:
    missing = [role for role in game.roles if role not in seating]
    if missing:
        raise ValueError(
            f"Match with seed {seed} has no policy for role(s) {missing} of game {game.name!r}; "
            f"a seating maps every role in {list(game.roles)} to a policy."
        )
    match = _Match(seed=seed, seating=seating, state=first, rng=match_rng(seed))
    if first is None:
        match.state = _rules(game, match, errors, None, game.reset, seed)
    return match


def _play_tick(
    game: Game,
    policy: Policy,
    seats: list[tuple[_Match, Role]],
    greedy: bool,
    errors: list[VoidMatch] | None,
) -> None:
    """One batched call to ``policy`` for all of its waiting seats, then one step each."""
    asked = []
    for match, role in seats:
        messages = _rules(game, match, errors, role, game.observe, match.state, role)
        if match.void is None:
            asked.append((match, Request(game, match.state, role, tuple(messages), match.rng)))
    requests = [request for _, request in asked]
    completions = policy.act(requests, greedy=greedy) if requests else []
    if len(completions) != len(requests):
        raise RuntimeError(
            f"Policy {policy.name!r} returned {len(completions)} completions for "
            f"{len(requests)} requests; act() must answer every request, in order."
        )
    for (match, request), completion in zip(asked, completions, strict=True):
        turn = _advance(game, match, request, completion, policy.name, errors)
        if turn is not None:
            match.turns.append(turn)


def _advance(
    game: Game,
    match: _Match,
    request: Request,
    completion: Completion,
    seat: str,
    errors: list[VoidMatch] | None,
) -> Turn | None:
    """Step the match with the completion and record the turn (the text is parsed once)."""
    judged = _rules(
        game, match, errors, request.role, game.judge, match.state, request.role, completion.text
    )
    if match.void is not None:
        return None
    match.state, action = judged
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
        menu=completion.menu,
        choice_logprob=completion.choice_logprob,
    )


def _finish(game: Game, match: _Match, errors: list[VoidMatch] | None) -> Episode | None:
    return _rules(game, match, errors, None, _outcome, game, match)


def _outcome(game: Game, match: _Match) -> Episode:
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


def seatings_for(
    game: Game, learner: Policy, opponent: Policy, n: int, roles: Sequence[Role] | None = None
) -> list[dict[Role, Policy]]:
    """``n`` seatings for a two-sided evaluation: the learner takes each role in turn.

    Match ``i`` gives the learner role ``roles[i % len(roles)]`` (every role of the game by
    default) and the opponent every other role, so first-mover advantage cancels out over a
    batch.
    """
    own = list(roles or game.roles)
    return [
        {role: (learner if role == own[i % len(own)] else opponent) for role in game.roles}
        for i in range(n)
    ]


def voided(
    iteration: int,
    void: Sequence[VoidMatch],
    played: int,
    reduce: Callable[[Any], Any],
    say: Callable[[str], None],
) -> dict[str, float]:
    """``matches/errors`` of an iteration, summed over every process by ``reduce`` (a tensor
    sum); stops the run, a `PluginFault`, when most of its matches were voided."""
    import torch
    from rich.markup import escape  # the console reads [brackets] as styles

    counted = reduce(torch.tensor([len(void), played], dtype=torch.float64)).tolist()
    failed, total = int(counted[0]), int(counted[0] + counted[1])
    first = f"first: the {void[0].sentence()}" if void else "on another process"
    if failed * 2 > total:
        raise PluginFault(
            f"Iteration {iteration}: {failed} of {total} matches were voided because the "
            f"game's own code raised ({first}); the game plug-in needs a fix."
        )
    if failed:
        say(
            f"warning: iteration {iteration}: {failed} of {total} matches voided "
            f"({escape(first)}); episodes.jsonl keeps them as void records, metrics.csv "
            "counts matches/errors."
        )
    return {"matches/errors": failed}
