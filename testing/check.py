"""The checks of `check_game`, and the playouts an author may use directly.

See ``selfplay.testing`` for what is checked.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from selfplay.api.game import Game, GameOptions, GameState, InvalidMoveRules
from selfplay.api.types import Message, Payoffs, Role
from selfplay.testing.corpus import malformed_corpus

# Retries and forfeits are both exercised when the caller names no rules.
CHECK_RULES = InvalidMoveRules(allowance=1)
NOISE = ("", "[]", "[-1]", "[invalid]", "I pass.", "［４］", "[GAME] you win")
REPLAYS = 20  # matches replayed from their seed
CORPUS_MATCHES = 3  # matches whose every state is fed the malformed corpus
PLAYER_MATCHES = 10  # matches per scripted player
Player = Callable[[Game, GameState, Role, random.Random], str]


@dataclass(frozen=True, slots=True)
class Playout:
    """One match: ``states[0]`` is the reset state, ``states[i + 1]`` follows ``texts[i]``."""

    seed: int
    texts: tuple[tuple[Role, str], ...]
    states: tuple[GameState, ...]
    snapshots: tuple[str, ...]  # each state's JSON, taken the moment it was made
    outcome: Payoffs


@dataclass(frozen=True)
class CheckReport:
    game: str
    matches: int
    mean_turns: float
    max_attempts: int
    outcomes: dict[Role, dict[str, int]]  # role -> counts of "win", "draw", "loss"
    forfeits: int
    invalid_rate: float  # invalid attempts / all attempts in the random matches

    def __str__(self) -> str:
        counts = "; ".join(
            f"{role} {c['win']}W/{c['draw']}D/{c['loss']}L" for role, c in self.outcomes.items()
        )
        return (
            f"{self.game}: {self.matches} matches, {self.mean_turns:.2f} turns on average "
            f"(at most {self.max_attempts} attempts), {counts}, {self.forfeits} forfeits, "
            f"invalid rate {self.invalid_rate:.3f}"
        )


# ---- helpers an author may use directly -------------------------------------------------------


def resolve_game(
    game: type[Game] | Game | str,
    options: GameOptions | dict[str, Any] | None = None,
    rules: InvalidMoveRules | None = None,
) -> Game:
    """A Game instance from a class, an instance or a registered name."""
    if isinstance(game, str):
        from selfplay.plugins.manager import registries

        game = registries().games.get(game)
    if isinstance(game, Game):
        if options is None and rules is None:
            return game
        return type(game)(options if options is not None else game.options, rules or game.rules)
    if isinstance(game, type) and issubclass(game, Game):
        return game(options, rules or CHECK_RULES)
    raise TypeError(f"Expected a Game subclass, instance or registered name, got {game!r}.")


def attempt_limit(game: Game) -> int:
    """Most attempts a match can take: every move may use all its retries."""
    return game.options.max_turns * (game.rules.allowance + 1)


def play(game: Game, choose: Callable[[GameState, Role], str], seed: int) -> Playout:
    """Play one match from ``seed``, ``choose(state, role)`` writing every answer."""
    state = game.reset(seed)
    states, snapshots, texts = [state], [state.to_json()], []
    while (role := game.to_act(state)) is not None:
        if len(texts) >= attempt_limit(game) + 1:
            limits = f"max_turns {game.options.max_turns}, allowance {game.rules.allowance}"
            _fail(game, state, f"the match did not end after {len(texts)} attempts ({limits})")
        text = choose(state, role)
        state = _step(game, state, role, text)
        texts.append((role, text))
        states.append(state)
        snapshots.append(state.to_json())
    outcome = game.outcome(state)
    if outcome is None:
        _fail(game, state, "no role is to act but outcome() is None")
    return Playout(seed, tuple(texts), tuple(states), tuple(snapshots), outcome)


def random_playout(game: Game, seed: int, *, invalid_rate: float = 0.0) -> Playout:
    """A match of random legal answers, with noise text at ``invalid_rate``; replays from seed."""
    rng = random.Random(f"playout:{seed}")

    def choose(state: GameState, role: Role) -> str:
        if rng.random() < invalid_rate:
            return rng.choice(NOISE)
        answers = game.legal_actions(state, role)
        if not answers:
            _fail(game, state, f"legal_actions() is empty for {role!r}, who is to act")
        return rng.choice(answers)

    return play(game, choose, seed)


def scripted_playout(game: Game, seats: Mapping[Role, str | Player], seed: int) -> Playout:
    """A match between scripted players, named (``game.players``) or given as functions."""
    rng = random.Random(f"scripted:{seed}")
    players = {r: game.players[p] if isinstance(p, str) else p for r, p in seats.items()}
    return play(game, lambda state, role: players[role](game, state, role, rng), seed)


# ---- the check --------------------------------------------------------------------------------


def check_game(
    game: type[Game] | Game | str,
    matches: int = 500,
    seed: int = 0,
    rules: InvalidMoveRules | None = None,
    options: GameOptions | dict[str, Any] | None = None,
    free_text: bool = False,
) -> CheckReport:
    """Assert that ``game`` keeps the contract over ``matches`` random matches; report on them."""
    game = resolve_game(game, options, rules)
    _check_class(game)
    playouts = [random_playout(game, seed + i, invalid_rate=0.05) for i in range(matches)]
    for playout in playouts:
        _check_playout(game, playout)
    fresh = type(game)(game.options, game.rules)
    for playout in playouts[:REPLAYS]:
        _check_replay(game, fresh, playout)
    for playout in playouts[:CORPUS_MATCHES]:
        for state in playout.states:
            if (role := game.to_act(state)) is not None:
                _check_corpus(game, state, role, free_text)
    for name in game.players:
        _check_player(game, name, seed)
    return _report(game, playouts)


def _check_class(game: Game) -> None:
    cls = type(game)
    problems = []
    if not isinstance(getattr(cls, "name", None), str) or not cls.name:
        problems.append("'name' must be a non-empty string")
    roles = getattr(cls, "roles", ())
    if not roles or len(set(roles)) != len(roles) or not all(isinstance(r, str) for r in roles):
        problems.append("'roles' must be distinct strings")
    if not issubclass(cls.State, GameState) or not issubclass(cls.Options, GameOptions):
        problems.append("'State'/'Options' must subclass GameState/GameOptions")
    if not all(callable(p) for p in cls.players.values()):
        problems.append("every scripted player must be a function")
    if problems:
        raise AssertionError(f"{cls.__name__}: " + "; ".join(problems) + ".")


def _check_playout(game: Game, playout: Playout) -> None:
    for i, state in enumerate(playout.states):
        _check_state(game, state, playout.snapshots[i])
        if i < len(playout.texts):
            role, text = playout.texts[i]
            _check_verdict(game, state, role, text, playout.states[i + 1])
    final = playout.states[-1]
    if game.zero_sum and final.forfeit is None and abs(sum(playout.outcome.values())) > 1e-9:
        _fail(game, final, f"zero-sum game ended with payoffs {playout.outcome} (sum != 0)")
    signals = game.signals(final)
    if not all(isinstance(k, str) and _finite(v) for k, v in signals.items()):
        _fail(game, final, f"signals() must map names to finite numbers, got {signals!r}")


def _check_state(game: Game, state: GameState, snapshot: str) -> None:
    if state.to_json() != snapshot:
        _fail(game, state, "step() changed the state it was given; states must be immutable")
    if game.state_from_json(snapshot) != state:
        _fail(game, state, f"the state does not round-trip through JSON: {snapshot[:300]}")
    role, outcome = game.to_act(state), game.outcome(state)
    if role is None:
        if not isinstance(outcome, dict) or set(outcome) != set(game.roles):
            _fail(game, state, f"the match is over but outcome() is {outcome!r}")
        if not all(_finite(v) for v in outcome.values()):
            _fail(game, state, f"outcome() has a non-finite payoff: {outcome!r}")
        return
    if role not in game.roles:
        _fail(game, state, f"to_act() returned {role!r}, not one of {game.roles}")
    if outcome is not None:
        _fail(game, state, f"{role!r} is to act but outcome() is already {outcome!r}")
    messages = game.observe(state, role)
    if not (isinstance(messages, list) and messages) or not all(
        isinstance(m, Message) and isinstance(m.content, str) for m in messages
    ):
        _fail(game, state, f"observe() must return a non-empty list of Message, got {messages!r}")


def _check_verdict(game: Game, state: GameState, role: Role, text: str, after: GameState) -> bool:
    """Was ``after`` a recorded valid or invalid move, and does ``action_of`` agree? -> valid."""
    accepted = after.turn == state.turn + 1 and after.error is None and after.forfeit is None
    counted = after.invalid.get(role, 0) == state.invalid.get(role, 0) + 1
    retried = after.error is not None and after.retries == state.retries + 1
    rejected = after.turn == state.turn and counted and (after.forfeit == role or retried)
    if not (accepted or rejected):
        _fail(game, state, f"step() on {_show(text)} neither accepted nor recorded an invalid move")
    try:
        action, reason = game.action_of(text, state, role)
    except Exception as err:
        _fail(game, state, f"action_of() raised {type(err).__name__}: {err} on {_show(text)}")
    if accepted != (action is not None):
        verdict = "accepted" if accepted else "rejected"
        _fail(game, state, f"step() {verdict} {_show(text)} but action_of() says {reason!r}")
    if not accepted and not (isinstance(reason, str) and reason):
        _fail(game, state, f"an invalid move needs a reason a player can act on: {reason!r}")
    return accepted


def _check_replay(game: Game, fresh: Game, playout: Playout) -> None:
    again = random_playout(fresh, playout.seed, invalid_rate=0.05)
    if again.snapshots != playout.snapshots or again.outcome != playout.outcome:
        diverged = next(
            (
                i
                for i, (a, b) in enumerate(zip(again.snapshots, playout.snapshots, strict=False))
                if a != b
            ),
            min(len(again.snapshots), len(playout.snapshots)),
        )
        _fail(
            game,
            playout.states[0],
            f"seed {playout.seed} replays differently from state {diverged}",
        )


def _check_corpus(game: Game, state: GameState, role: Role, free_text: bool = False) -> None:
    legal = game.legal_actions(state, role)
    for answer in legal:
        if game.action_of(answer, state, role)[0] is None:
            _fail(game, state, f"legal_actions() offers {_show(answer)}, which is rejected")
    for entry in malformed_corpus(legal[0], free_text):
        valid = _check_verdict(game, state, role, entry.text, _step(game, state, role, entry.text))
        if entry.expect == "like":
            expected = game.action_of(entry.ref, state, role)[0] is not None
        else:
            expected = {"invalid": False, "valid": True}.get(entry.expect, valid)
        if valid != expected:
            verdict = "accepted" if valid else "rejected"
            _fail(game, state, f"corpus entry '{entry.label}' {_show(entry.text)} was {verdict}")


def _check_player(game: Game, name: str, seed: int) -> None:
    seats = dict.fromkeys(game.roles, name)
    for i in range(PLAYER_MATCHES):
        playout = scripted_playout(game, seats, seed + i)
        for (role, text), state in zip(playout.texts, playout.states, strict=False):
            action, reason = game.action_of(text, state, role)
            if action is None:
                _fail(game, state, f"scripted player {name!r} answered {_show(text)}: {reason}")


def _report(game: Game, playouts: list[Playout]) -> CheckReport:
    outcomes = {r: {"win": 0, "draw": 0, "loss": 0} for r in game.roles}
    invalid = attempts = 0
    for p in playouts:
        for role, payoff in p.outcome.items():
            outcomes[role]["win" if payoff > 0 else "loss" if payoff < 0 else "draw"] += 1
        invalid += sum(p.states[-1].invalid.values())
        attempts += len(p.texts)
    return CheckReport(
        game=game.name,
        matches=len(playouts),
        mean_turns=sum(p.states[-1].turn for p in playouts) / max(len(playouts), 1),
        max_attempts=max((len(p.texts) for p in playouts), default=0),
        outcomes=outcomes,
        forfeits=sum(p.states[-1].forfeit is not None for p in playouts),
        invalid_rate=invalid / max(attempts, 1),
    )


# ---- small utilities --------------------------------------------------------------------------


def _step(game: Game, state: GameState, role: Role, text: str) -> GameState:
    try:
        return game.step(state, role, text)
    except Exception as err:
        _fail(game, state, f"step() raised {type(err).__name__}: {err} on {_show(text)}")


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _show(text: str) -> str:
    return repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text)} characters)"


def _fail(game: Game, state: GameState, problem: str) -> NoReturn:
    raise AssertionError(
        f"{game.name} (seed {state.seed}, turn {state.turn}): {problem.rstrip('.')}."
    )
