"""Kuhn poker: three cards (J < Q < K), one private card each, one betting round.

Both players ante 1 chip. player_0 checks or bets 1; after a check player_1 checks (showdown
for a pot of 2) or bets; after any bet the other player calls (showdown for a pot of 4) or
folds. Payoffs are the chips won or lost, so the game is zero-sum with values ±1 or ±2.

The private card is the last thing in the prompt: a small model that read the card first
ignored it and played every information set alike ("always bet"); card last fixed that.

The module keeps the betting tree as plain functions over (card, history) information sets,
so the exact value of any pair of strategies, and later their exploitability, can be computed
by enumerating the six deals instead of sampling.

Phrasings (games/phrasing.py): ``reworded`` (the rules and both headings in other words);
``obfuscated``, a contest of three tokens ranked ivy < elm < oak whose moves are [wait],
[push], [meet] and [quit], never named poker; ``no-menu``, the rules with the moves named but
no move in brackets, and no list of the legal ones.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import ClassVar

from pydantic import Field

from selfplay.api.game import (
    NO_MENU,
    OBFUSCATED,
    REWORDED,
    Game,
    GameOptions,
    GameState,
    InvalidAction,
    Player,
)
from selfplay.api.types import Episode, Message, Payoffs, Role
from selfplay.games import tabular
from selfplay.games.move_names import read_name
from selfplay.games.phrasing import Renaming
from selfplay.games.tabular import InfoSet, Policy, PolicyTable
from selfplay.plugins.hookspecs import hookimpl

CARDS = ("J", "Q", "K")
RANK = {card: i for i, card in enumerate(CARDS)}
ROLES = ("player_0", "player_1")
History = tuple[str, ...]
# Probabilities may be Fractions, which keep exact computations exact.
Prob = Fraction | float
# A strategy maps an information set (own card, betting so far, role) to action probabilities.
Strategy = Callable[[str, History, Role], Mapping[str, Prob]]
# Kuhn's one-parameter family of equilibria for player_0; every alpha in [0, 1/3] is a Nash
# equilibrium with the same value (-1/18 for player_0).
NASH_ALPHA = Fraction(1, 3)
GAME_VALUE = Fraction(-1, 18)

RULES = (
    "You are playing Kuhn poker as {role}. The deck is J < Q < K; each player antes 1 chip "
    "and gets one private card. player_0 acts first: [check] or [bet] (1 chip). After a check, "
    "player_1 may [check] (showdown) or [bet]. After a bet, the other player must [call] "
    "(showdown) or [fold] (the bettor takes the pot). At showdown the higher card wins the pot. "
    "Answer with one legal action in square brackets, for example [check]."
)
# The same rules and answer format in other words (`Game.phrasings`).
REWORDED_WORDS = {
    "You are playing Kuhn poker as ": "Kuhn poker; you are ",
    "The deck is J < Q < K; each player antes 1 chip and gets one private card.": (
        "Three cards make the deck, ranked J < Q < K. Both players put in 1 chip and are dealt "
        "one card each, which only they see."
    ),
    "Answer with one legal action in square brackets, for example [check].": (
        "Reply with a legal action inside square brackets, such as [check]."
    ),
    "History: ": "Actions so far: ",
    "Legal: ": "You may play: ",
}
# The same game under other names: no card, chip count or move is poker's (`spelled`).
OBFUSCATED_RULES = (
    "A two-player contest of three tokens ranked ivy < elm < oak; you are the {seat} player. "
    "Each player puts 1 chip in the pot and gets one token that only they see. The first "
    "player moves first: [wait] or [push] (1 more chip). After a wait, the second player may "
    "[wait] (reveal) or [push]. After a push, the other player must [meet] (1 more chip, then "
    "reveal) or [quit] (the pusher takes the pot). At a reveal the higher token takes the pot. "
    "Reply with one allowed move in square brackets, for example [wait]."
)
SEATS = {"player_0": "first", "player_1": "second"}
SPIEL_ACTIONS = {"check": 0, "fold": 0, "bet": 1, "call": 1}  # OpenSpiel's Pass and Bet
MOVES = Renaming({"check": "wait", "bet": "push", "call": "meet", "fold": "quit"})
TOKENS = Renaming({"J": "ivy", "Q": "elm", "K": "oak"})
# No move in brackets, no example and no list of the legal moves.
NO_MENU_RULES = (
    "You are playing Kuhn poker as {role}. The deck is J < Q < K; each player antes 1 chip "
    "and gets one private card. player_0 acts first: check or bet (1 chip). After a check, "
    "player_1 may check (showdown) or bet. After a bet, the other player must call "
    "(showdown) or fold (the bettor takes the pot). At showdown the higher card wins the pot. "
    "Answer with one legal action's name in square brackets."
)


class KuhnPokerOptions(GameOptions):
    max_turns: int = Field(
        default=3, ge=1, le=3, description="Moves before a draw (3: every hand ends by then)."
    )


class KuhnPokerState(GameState):
    cards: tuple[str, str]  # player_0's card, player_1's card
    history: History = ()


# ---- the betting tree, as functions of the history ---------------------------------------------


def is_terminal(history: History) -> bool:
    return history in (("check", "check"), ("bet", "call"), ("bet", "fold")) or len(history) == 3


def role_to_act(history: History) -> Role | None:
    """player_0 moves on even-length histories; None once the hand is over."""
    return None if is_terminal(history) else ROLES[len(history) % 2]


def legal_moves(history: History) -> tuple[str, ...]:
    """After a bet only call/fold; otherwise check/bet; nothing once the hand is over."""
    if is_terminal(history):
        return ()
    return ("call", "fold") if history[-1:] == ("bet",) else ("check", "bet")


def payoffs(cards: tuple[str, str], history: History) -> Payoffs:
    """Chips won by each role at a terminal history (ante 1, bet 1)."""
    if history[-1] == "fold":
        folder = ROLES[(len(history) - 1) % 2]
        return {r: (-1.0 if r == folder else 1.0) for r in ROLES}
    stake = 2.0 if "bet" in history else 1.0
    sign = 1.0 if RANK[cards[0]] > RANK[cards[1]] else -1.0
    return {"player_0": sign * stake, "player_1": -sign * stake}


def info_set(card: str, history: History) -> str:
    """A stable key for what the player to move knows, e.g. ``'K:check,bet'`` or ``'Q:'``."""
    return f"{card}:{','.join(history)}"


def info_sets(role: Role | None = None) -> list[tuple[Role, str, History]]:
    """All 12 decision points (six per role) as (role, card, history)."""
    points: list[tuple[Role, str, History]] = []
    for history in ((), ("check",), ("bet",), ("check", "bet")):
        who = role_to_act(history)
        if role is None or who == role:
            points.extend((who, card, history) for card in CARDS)
    return points


def expected_payoffs(strategies: Mapping[Role, Strategy]) -> dict[Role, Prob]:
    """Exact expected payoffs of two strategies, enumerating the six equally likely deals.

    Probabilities given as Fractions keep the result exact; floats give a float result.
    """
    total: dict[Role, Prob] = dict.fromkeys(ROLES, Fraction(0))
    deals = list(itertools.permutations(CARDS, 2))
    for cards in deals:
        for history, prob in _reach(cards, (), Fraction(1), strategies):
            for role, value in payoffs(cards, history).items():
                total[role] += prob * int(value) / len(deals)
    return total


def _reach(
    cards: tuple[str, str], history: History, prob: Prob, strategies: Mapping[Role, Strategy]
) -> list[tuple[History, Prob]]:
    """Terminal histories below ``history`` with their probabilities under ``strategies``."""
    if is_terminal(history):
        return [(history, prob)]
    role = role_to_act(history)
    policy = strategies[role](cards[ROLES.index(role)], history, role)
    leaves: list[tuple[History, Prob]] = []
    for action in legal_moves(history):
        p = policy.get(action, 0)
        if p:
            leaves.extend(_reach(cards, (*history, action), prob * p, strategies))
    return leaves


def uniform_probabilities(card: str, history: History, role: Role) -> dict[str, Fraction]:
    moves = legal_moves(history)
    return {m: Fraction(1, len(moves)) for m in moves}


def nash_probabilities(
    card: str, history: History, role: Role, alpha: Fraction = NASH_ALPHA
) -> dict[str, Fraction]:
    """Kuhn's equilibrium: bluff J with alpha, value-bet K with 3*alpha, call Q with alpha+1/3."""
    if not 0 <= alpha <= Fraction(1, 3):
        raise ValueError(f"alpha must lie in [0, 1/3], got {alpha}.")
    third = Fraction(1, 3)
    if history == ():
        bet = {"J": alpha, "Q": Fraction(0), "K": 3 * alpha}[card]
        return {"check": 1 - bet, "bet": bet}
    if history == ("check", "bet"):
        call = {"J": Fraction(0), "Q": alpha + third, "K": Fraction(1)}[card]
        return {"call": call, "fold": 1 - call}
    if history == ("check",):
        bet = {"J": third, "Q": Fraction(0), "K": Fraction(1)}[card]
        return {"check": 1 - bet, "bet": bet}
    if history == ("bet",):
        call = {"J": Fraction(0), "Q": third, "K": Fraction(1)}[card]
        return {"call": call, "fold": 1 - call}
    raise ValueError(f"No decision at history {history!r}.")


# ---- exact exploitability ----------------------------------------------------------------------


def strategy_table(strategy: Strategy) -> dict[str, dict[str, Prob]]:
    """``strategy`` as a policy table over the 12 information sets (keys from `info_set`)."""
    return {info_set(card, h): dict(strategy(card, h, role)) for role, card, h in info_sets()}


def table_strategy(table: Mapping[str, Mapping[str, Prob]]) -> Strategy:
    """The strategy that plays a policy table (the inverse of `strategy_table`)."""
    return lambda card, history, role: table[info_set(card, history)]


def best_response_value(role: Role, opponent: Strategy) -> Prob:
    """The most ``role`` can expect against ``opponent``: the best of its 64 pure strategies."""
    points = info_sets(role)
    other = ROLES[1 - ROLES.index(role)]
    best: Prob | None = None
    for choice in itertools.product(*(legal_moves(history) for _, _, history in points)):
        plan = {
            info_set(card, history): a for (_, card, history), a in zip(points, choice, strict=True)
        }
        value = expected_payoffs({role: _pure(plan), other: opponent})[role]
        best = value if best is None else max(best, value)
    return best


def _pure(plan: Mapping[str, str]) -> Strategy:
    return lambda card, history, role: {plan[info_set(card, history)]: 1}


def nash_conv(strategy: Strategy) -> Prob:
    """What best responses gain against ``strategy`` playing both seats (0 at an equilibrium).

    In a zero-sum game the payoffs of the strategy against itself cancel, so NashConv is the
    sum of the two best-response values.
    """
    return sum(best_response_value(role, strategy) for role in ROLES)


# ---- scripted players --------------------------------------------------------------------------


def random_player(game: Game, state: KuhnPokerState, role: Role, rng: random.Random) -> str:
    return rng.choice(game.legal_actions(state, role))


def nash_player(game: Game, state: KuhnPokerState, role: Role, rng: random.Random) -> str:
    card = state.cards[ROLES.index(role)]
    probs = nash_probabilities(card, state.history, role)
    actions = list(probs)
    return game.answer(rng.choices(actions, weights=[float(probs[a]) for a in actions])[0])


class KuhnPoker(Game):
    name = "kuhn-poker"
    roles = ROLES
    lists_every_move = True
    description = (
        "Kuhn poker (J, Q, K; one betting round); answer [check], [bet], [call] or [fold]."
    )
    Options = KuhnPokerOptions
    State = KuhnPokerState
    answer_hint = "[check] (a legal action in square brackets)"
    players: ClassVar[dict[str, Player]] = {"random": random_player, "nash": nash_player}
    # obfuscated and no-menu are written by `prompt`
    phrasings: ClassVar[dict[str, dict[str, str]]] = {
        REWORDED: REWORDED_WORDS,
        OBFUSCATED: {},
        NO_MENU: {},
    }

    def initial(self, seed: int, rng: random.Random) -> KuhnPokerState:
        return KuhnPokerState(seed=seed, cards=tuple(rng.sample(CARDS, 2)))

    def current_role(self, state: KuhnPokerState) -> Role | None:
        return role_to_act(state.history)

    def prompt(self, state: KuhnPokerState, role: Role) -> list[Message]:
        phrasing = self.options.phrasing
        history = ", ".join(self.spelled(a) for a in state.history) or "none"
        legal = " ".join(self.answer(m) for m in legal_moves(state.history))
        card = state.cards[ROLES.index(role)]
        if phrasing == OBFUSCATED:
            token = TOKENS.spell(card)
            return [
                Message("system", OBFUSCATED_RULES.format(seat=SEATS[role])),
                Message("user", f"Moves so far: {history}. Allowed: {legal}. Your token: {token}"),
            ]
        if phrasing == NO_MENU:
            return [
                Message("system", NO_MENU_RULES.format(role=role)),
                Message("user", f"History: {history}. Your card: {card}"),
            ]
        return [
            Message("system", RULES.format(role=role)),
            Message("user", f"History: {history}. Legal: {legal}. Your card: {card}"),
        ]

    def spelled(self, action: str) -> str:
        return MOVES.spell(action) if self.options.phrasing == OBFUSCATED else action

    def legal(self, state: KuhnPokerState, role: Role, action: str) -> str:
        move = read_name(action)
        if self.options.phrasing == OBFUSCATED:
            move = MOVES.read(move) or f"not a move: {move}"
        moves = legal_moves(state.history)
        if move not in moves:
            if self.options.phrasing == NO_MENU:  # a retry's reason lists no moves either
                raise InvalidAction(f"{action[:20]!r} is not a legal action now.")
            options = " or ".join(self.answer(m) for m in moves)
            raise InvalidAction(f"{action[:20]!r} is not a legal action now; answer {options}.")
        return move

    def apply(self, state: KuhnPokerState, role: Role, action: str) -> KuhnPokerState:
        return state.model_copy(update={"history": (*state.history, action)})

    def result(self, state: KuhnPokerState) -> Payoffs | None:
        if is_terminal(state.history):
            return payoffs(state.cards, state.history)
        return None

    def legal_actions(self, state: KuhnPokerState, role: Role) -> list[str]:
        return [self.answer(m) for m in legal_moves(state.history)]

    # ---- OpenSpiel's kuhn_poker: cards 0-2 dealt by chance, then pass 0 / bet 1 ------------

    def spiel_game(self) -> str:
        return "kuhn_poker()"

    def spiel_actions(self, episode: Episode) -> list[tuple[int, int]]:
        deal = [(-1, RANK[card]) for card in episode.state["cards"]]
        moves = [
            (ROLES.index(turn.role), SPIEL_ACTIONS[turn.action])
            for turn in episode.turns
            if turn.valid and turn.action is not None
        ]
        return deal + moves

    # ---- the TabularGame capability (games/tabular.py) ------------------------------------

    def information_sets(self) -> list[InfoSet]:
        """The 12 decision points, each with a state that shows exactly its prompt."""
        if self.options.max_turns < 3:
            raise ValueError(
                f"Exact evaluation needs the full game (max_turns=3), got max_turns="
                f"{self.options.max_turns}."
            )
        return [_info_set_of(role, card, history) for role, card, history in info_sets()]

    def exploitability(self, policy: Policy) -> float:
        """NashConv / 2 of ``policy`` playing both seats; Kuhn's equilibria give 0."""
        table = tabular.check_policy(self.information_sets(), policy)
        return float(nash_conv(table_strategy(table)) / 2)

    def average_policy(self, policies: Sequence[Policy], weights: Sequence[float]) -> PolicyTable:
        return tabular.average_policy(self.information_sets(), policies, weights)


def _info_set_of(role: Role, card: str, history: History) -> InfoSet:
    """The opponent's card is hidden from the prompt, so any other card represents them all."""
    other = next(c for c in CARDS if c != card)
    cards = (card, other) if role == ROLES[0] else (other, card)
    state = KuhnPokerState(seed=0, cards=cards, history=history, turn=len(history))
    previous = None
    for k in range(len(history) - 1, -1, -1):
        if role_to_act(history[:k]) == role:
            previous = (info_set(card, history[:k]), history[k])
            break
    return InfoSet(info_set(card, history), role, state, legal_moves(history), previous)


@hookimpl
def register_games(register):
    register(KuhnPoker)
