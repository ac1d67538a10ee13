"""The game contract: immutable rules (`Game`) split from one play-through (`GameState`).

The split follows OpenSpiel: a `Game` holds rules and options and is safe to share; a
`GameState` is a frozen, JSON-serialisable value, so thousands of matches run in lock-step and
any match replays from its seed.

Authors implement a handful of small methods (`initial`, `current_role`, `prompt`, `legal`,
`apply`, `result`); the public verbs (`reset`, `to_act`, `observe`, `step`, `outcome`) live
here and add the parts every game shares: answer parsing, the invalid-move policy and
`max_turns`.
"""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from selfplay.api.errors import ConfigError
from selfplay.api.options import InvalidMoveRules
from selfplay.api.types import Episode, Message, Payoffs, Role

# Longest model output a game looks at. Anything longer is judged on its tail, where the
# answer must be anyway (the last answer span is the action).
MAX_TEXT_CHARS = 4096
# The prompt as each game writes it; a game ships other phrasings in its ``phrasings``
# (games/phrasing.py says what each one is): the same words said otherwise, other names for
# cells, pieces and moves, no list of the legal moves. The games evaluation suites play ship
# all of them.
DEFAULT_PHRASING = "default"
REWORDED, OBFUSCATED, NO_MENU = "reworded", "obfuscated", "no-menu"
SUITE_PHRASINGS = (DEFAULT_PHRASING, REWORDED, OBFUSCATED, NO_MENU)


class GameOptions(BaseModel):
    """Options every game accepts; games subclass this and add their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(
        default=20, ge=1, description="Accepted moves after which the match ends in a draw."
    )
    answer_prefix: str = Field(
        default="",
        max_length=40,
        description=(
            "Text every reply starts with (an assistant prefill, e.g. '['): a pretrained chat "
            "model then continues a move instead of writing prose."
        ),
    )
    phrasing: str = Field(
        default=DEFAULT_PHRASING,
        max_length=40,
        description="The prompt's wording: default, or one the game ships (its `phrasings`; "
        "the games evaluation suites play ship 'reworded': other words, 'obfuscated': other "
        "names for cells, pieces and moves, 'no-menu': no list of legal moves).",
    )


class GameState(BaseModel):
    """Fields every state carries; games subclass it with their own (frozen) fields.

    ``turn`` counts accepted moves; ``retries`` counts invalid attempts at the current move;
    ``error`` is the reason the last attempt was rejected (shown to the player on a retry);
    ``forfeit`` names the role that forfeited; ``invalid`` totals invalid attempts per role.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int
    turn: int = 0
    retries: int = 0
    error: str | None = None
    forfeit: Role | None = None
    invalid: dict[Role, int] = Field(default_factory=dict)

    def to_json(self) -> str:
        return self.model_dump_json()


# A scripted player: (game, state, role, rng) -> answer text, e.g. "[4]".
Player = Callable[["Game", GameState, Role, random.Random], str]


class InvalidAction(ValueError):
    """Raised by a game's `parse` or `legal`; `step` turns it into a recorded invalid move."""


class Game(ABC):
    """Rules of one game. Subclasses set the class attributes and implement the hooks below."""

    name: ClassVar[str]
    roles: ClassVar[tuple[Role, ...]]
    description: ClassVar[str]
    Options: ClassVar[type[GameOptions]] = GameOptions
    State: ClassVar[type[GameState]] = GameState
    zero_sum: ClassVar[bool] = True
    # The answer format, stated in every prompt; the last match in the text is the action.
    answer_pattern: ClassVar[re.Pattern[str]] = re.compile(r"\[([^\[\]\n]{1,40})\]")
    answer_hint: ClassVar[str] = "[move]"
    # Scripted players: name -> function(game, state, role, rng) -> answer text.
    players: ClassVar[dict[str, Player]] = {}
    # Options a reward gets in this game unless the user sets them, by reward name, e.g.
    # {"judge": {"mode": "pairwise"}} for a game that only a comparison of its roles decides.
    reward_defaults: ClassVar[dict[str, dict[str, Any]]] = {}
    # The recipe this game trains with when the run names none (`selfplay recipes`): settings
    # measured on this game, which would not suit every game as run-wide defaults. `selfplay
    # run` names them when it starts; the user's own settings win.
    recipe: ClassVar[str | None] = None
    # True when the rules consult a verifier: the run then hands the game ``verifiers``, a
    # ``(name, options) -> Verifier`` factory shared by everything in the run.
    uses_verifier: ClassVar[bool] = False
    # The reward a run uses when it names none (``--reward``): the rules' payoffs for most
    # games; a game whose every answer has its own verdict may name a per-turn reward.
    default_reward: ClassVar[str] = "outcome"
    # True when the state hides nothing from any player (no private cards): a search over the
    # rules (the ``lookahead`` opponent) may then read the whole state.
    perfect_information: ClassVar[bool] = False
    # True when ``legal_actions`` lists every legal move (a board's empty cells, a poker
    # round's bets), so a learner may choose among them (``generation.choice=legal``); False
    # when it lists samples for scripted players (canned answers, a right and a wrong one).
    lists_every_move: ClassVar[bool] = False
    # Other wordings of the prompt, chosen by ``options.phrasing`` (games/phrasing.py): name ->
    # {text of the default prompt: the same text reworded}, replaced in every message the game
    # shows; a phrasing that renames or removes things is written by `prompt` itself (and
    # `spelled`, where it renames moves), its table then empty.
    phrasings: ClassVar[dict[str, dict[str, str]]] = {}

    def __init__(
        self,
        options: GameOptions | dict[str, Any] | None = None,
        rules: InvalidMoveRules | None = None,
        *,
        verifiers: Callable[[str, dict[str, Any]], Any] | None = None,
    ) -> None:
        if isinstance(options, dict) or options is None:
            options = self.Options(**(options or {}))
        self.options = options
        self.rules = rules or InvalidMoveRules()
        self.verifiers = verifiers
        phrasing = options.phrasing
        if phrasing != DEFAULT_PHRASING and phrasing not in self.phrasings:
            known = ", ".join((DEFAULT_PHRASING, *self.phrasings))
            raise ConfigError(
                f"{self.name} has no phrasing {phrasing!r}; its phrasings are: {known} "
                "(game_options.phrasing)."
            )

    # ---- what authors implement -------------------------------------------------------------

    @abstractmethod
    def initial(self, seed: int, rng: random.Random) -> GameState:
        """The state before the first move; chance (deals, values) is drawn from ``rng``."""

    @abstractmethod
    def current_role(self, state: GameState) -> Role | None:
        """The role to move in a non-terminal state, or None when the rules say it is over."""

    @abstractmethod
    def prompt(self, state: GameState, role: Role) -> list[Message]:
        """What ``role`` sees: its instructions and the part of the state it may observe."""

    @abstractmethod
    def legal(self, state: GameState, role: Role, action: str) -> str:
        """Normalise a parsed action or raise InvalidAction with a reason a player can act on."""

    @abstractmethod
    def apply(self, state: GameState, role: Role, action: str) -> GameState:
        """The state after a legal action (``turn`` is advanced by the caller)."""

    @abstractmethod
    def result(self, state: GameState) -> Payoffs | None:
        """Payoffs when the rules end the match (win/loss/draw), otherwise None."""

    def legal_actions(self, state: GameState, role: Role) -> list[str]:
        """Legal answers, formatted as a player would write them; used by scripted players,
        and by a learner choosing among them when the game sets ``lists_every_move``."""
        return []

    def spelled(self, action: str) -> str:
        """How the options' phrasing writes the game's action ``action``: the action itself,
        unless the phrasing renames moves (``obfuscated``: tic-tac-toe's cell ``4`` is ``n``).
        `legal` reads such an answer back to the game's own action."""
        return action

    def answer(self, action: str) -> str:
        """The reply that plays ``action`` in the options' phrasing, e.g. ``[4]``."""
        return f"[{self.spelled(action)}]"

    def signals(self, state: GameState) -> dict[str, float]:
        """Numbers a game-signal reward may use (turns, invalid attempts, hints asked, ...)."""
        return {"turns": float(state.turn), "invalid": float(sum(state.invalid.values()))}

    # ---- the public verbs -------------------------------------------------------------------

    def reset(self, seed: int) -> GameState:
        return self.initial(seed, random.Random(seed))

    def start(self, episode: Episode) -> GameState:
        """The state ``episode`` was played from, to replay it turn by turn: ``reset`` of its
        seed, or for a branch (a match played on from another one's position, in
        ``episode.extra["branch"]["start"]``) that position."""
        branch = episode.extra.get("branch")
        if isinstance(branch, dict) and "start" in branch:
            return self.state_from_json(branch["start"])
        return self.reset(episode.seed)

    def to_act(self, state: GameState) -> Role | None:
        if state.forfeit is not None or state.turn >= self.options.max_turns:
            return None
        return self.current_role(state)

    def observe(self, state: GameState, role: Role) -> list[Message]:
        """What ``role`` is asked: the prompt, a retry's reason, the answer prefix if any.

        With ``answer_prefix`` the last message is the assistant's own start of the reply: a
        policy continues it, and ``judge`` reads the prefix and the continuation together.
        """
        messages = self.phrased(self.prompt(state, role))
        if state.error and self.to_act(state) == role:
            last = messages[-1]
            retry = f"Invalid move: {state.error} Try again."
            messages = [*messages[:-1], Message(last.role, f"{retry}\n{last.content}")]
        if self.options.answer_prefix:
            messages = [*messages, Message("assistant", self.options.answer_prefix)]
        return messages

    def phrased(self, messages: list[Message]) -> list[Message]:
        """``messages`` in the options' phrasing (unchanged in the default one)."""
        rewording = self.phrasings.get(self.options.phrasing)
        if not rewording:
            return messages
        reworded = []
        for message in messages:
            content = message.content
            for old, new in rewording.items():
                content = content.replace(old, new)
            reworded.append(Message(message.role, content))
        return reworded

    def continuation(self, text: str) -> str:
        """``text`` as a continuation of the answer prefix (a full answer loses the prefix)."""
        prefix = self.options.answer_prefix
        return text[len(prefix) :] if prefix and text.startswith(prefix) else text

    def parse(self, text: str) -> str:
        """The last answer span in ``text``; InvalidAction when there is none."""
        tail = text[-MAX_TEXT_CHARS:]
        matches = self.answer_pattern.findall(tail)
        if not matches:
            if self.options.phrasing in (NO_MENU, OBFUSCATED):  # the hint is a move, by name
                raise InvalidAction("no answer in square brackets.")
            raise InvalidAction(f"no answer in the form {self.answer_hint}.")
        return matches[-1].strip()

    def step(self, state: GameState, role: Role, text: str) -> GameState:
        """Apply ``role``'s output. An unparsable or illegal action is recorded, never raised."""
        return self.judge(state, role, text)[0]

    def judge(self, state: GameState, role: Role, text: str) -> tuple[GameState, str | None]:
        """`step`, also returning the normalised action (None when the attempt was invalid).

        ``text`` continues the answer prefix when the game has one.
        """
        if self.to_act(state) != role:
            raise ValueError(f"It is not {role!r}'s turn (to act: {self.to_act(state)!r}).")
        action, reason = self.action_of(self.options.answer_prefix + text, state, role)
        if action is None:
            return self._reject(state, role, reason or "invalid move."), None
        moved = self.apply(state, role, action)
        update = {"turn": state.turn + 1, "retries": 0, "error": None}
        return moved.model_copy(update=update), action

    def outcome(self, state: GameState) -> Payoffs | None:
        if state.forfeit is not None:
            return {
                r: (self.rules.penalty if r == state.forfeit else self.rules.bonus)
                for r in self.roles
            }
        result = self.result(state)
        if result is not None:
            return result
        if state.turn >= self.options.max_turns:
            return dict.fromkeys(self.roles, 0.0)
        return None

    def action_of(self, text: str, state: GameState, role: Role) -> tuple[str | None, str | None]:
        """(normalised action, None) or (None, reason): how ``step`` would judge ``text``."""
        try:
            return self.legal(state, role, self.parse(text)), None
        except InvalidAction as err:
            return None, str(err)

    def _reject(self, state: GameState, role: Role, reason: str) -> GameState:
        invalid = {**state.invalid, role: state.invalid.get(role, 0) + 1}
        if state.retries >= self.rules.allowance:
            return state.model_copy(update={"forfeit": role, "error": reason, "invalid": invalid})
        update = {"retries": state.retries + 1, "error": reason, "invalid": invalid}
        return state.model_copy(update=update)

    def state_from_json(self, text: str) -> GameState:
        return self.State.model_validate_json(text)


# ---- an optional capability: a policy held as a table ------------------------------------
#
# For games small enough to list their information sets (Kuhn poker has 12), exploitability is
# computed exactly instead of estimated from matches: a policy is read off the model at every
# information set (the probability of each legal action, scored from its log-probabilities),
# and a best response is found by enumeration. A game offers the capability by implementing
# `TabularGame`; ``isinstance(game, TabularGame)`` tells whether it does. Helpers to build such
# a game (checking, averaging and renormalising tables) are in ``selfplay.games.tabular``.
#
# A policy is a table ``{info-set key: {action: probability}}`` covering every information set of
# every role (one shared policy plays all seats). Actions are named as the game's ``legal()``
# returns them, e.g. ``"bet"``; `answer_text` gives the text that plays one.

Policy = Mapping[str, Mapping[str, float]]
PolicyTable = dict[str, dict[str, float]]


@dataclass(frozen=True)
class InfoSet:
    """One decision point as the acting role knows it.

    ``state`` is a representative state where ``role`` is to act, so ``game.observe(state,
    role)`` is exactly the prompt shown at this information set; ``actions`` are the legal
    actions there. ``previous`` is the same role's previous decision on the way here as
    (info-set key, action), None at its first decision; perfect recall makes it unique.
    """

    key: str
    role: Role
    state: GameState
    actions: tuple[str, ...]
    previous: tuple[str, str] | None = None


@runtime_checkable
class TabularGame(Protocol):
    """What a game provides for exact evaluation of tabular policies."""

    def information_sets(self) -> list[InfoSet]:
        """Every information set of every role."""
        ...

    def exploitability(self, policy: Policy) -> float:
        """NashConv divided by the number of players; 0 exactly at a Nash equilibrium."""
        ...

    def average_policy(self, policies: Sequence[Policy], weights: Sequence[float]) -> PolicyTable:
        """The reach-weighted average of ``policies`` mixed with ``weights``."""
        ...


def answer_text(game: Game, action: str) -> str:
    """The completion that plays ``action``, e.g. ``"[bet]"``: what a scorer should rate.

    With an answer prefix (``"["``) it is what follows the prefix (``"bet]"``); in a phrasing
    that renames moves, the move's name there.
    """
    text = game.answer(action)
    if game.parse(text) != game.spelled(action):
        raise ValueError(f"{game.name} does not read {text!r} as the action {action!r}.")
    return game.continuation(text)
