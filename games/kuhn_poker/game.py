"""Kuhn poker as a game the run plays: its prompts in four phrasings, its scripted players,
OpenSpiel's action numbers and the TabularGame capability (exact exploitability of a policy).

The private card is the last thing in the prompt: a small model that read the card first
ignored it and played every information set alike ("always bet"); card last fixed that.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
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
from selfplay.games.kuhn_poker.tree import (
    CARDS,
    RANK,
    ROLES,
    History,
    info_set,
    info_sets,
    is_terminal,
    legal_moves,
    nash_conv,
    nash_probabilities,
    payoffs,
    role_to_act,
    table_strategy,
)
from selfplay.games.move_names import read_name
from selfplay.games.phrasing import Renaming
from selfplay.games.tabular import InfoSet, Policy, PolicyTable
from selfplay.plugins.hookspecs import hookimpl

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
