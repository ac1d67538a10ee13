"""Rock-paper-scissors over one or more rounds, simultaneous moves played in turns.

Following OpenSpiel's turn-based simulation of simultaneous games, player_0 chooses first and
player_1 chooses next without seeing that choice: the pending choice lives in the state but
never in player_1's prompt. Finished rounds are shown to both players.

The payoff is the sign of (rounds won - rounds lost): +1, -1 or 0 for a tie, so one match is
one zero-sum result however many rounds it has.

Exact evaluation (the TabularGame capability of games/tabular.py) covers the first throw: two
information sets, one per role, and the one-shot matrix game of payoffs +1/0/-1. With
``rounds=1`` (the default) that is the whole game; with more rounds it measures only the
opening decision, as if the match ended there.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field, model_validator

from selfplay.api.game import Game, GameOptions, GameState, InvalidAction, Player
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games import tabular
from selfplay.games.move_names import read_name
from selfplay.games.tabular import InfoSet, Policy, PolicyTable
from selfplay.plugins.hookspecs import hookimpl

MOVES = ("rock", "paper", "scissors")
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}
ALIASES = {**{m: m for m in MOVES}, "r": "rock", "p": "paper", "s": "scissors"}
ROLES = ("player_0", "player_1")
RULES = (
    "You are playing rock-paper-scissors as {role}, {rounds} round(s). Rock beats scissors, "
    "scissors beats paper, paper beats rock. Both players choose at the same time: you never "
    "see the opponent's choice for the current round. Whoever wins more rounds wins the match. "
    "Answer [rock], [paper] or [scissors] (or [r], [p], [s])."
)


class RockPaperScissorsOptions(GameOptions):
    rounds: int = Field(default=1, ge=1, le=100, description="Rounds in one match.")
    max_turns: int = Field(
        default=2, ge=2, description="Moves in a match; always 2 * rounds (set from rounds)."
    )

    @model_validator(mode="before")
    @classmethod
    def _default_max_turns(cls, data: Any) -> Any:
        """Leaving max_turns out means 'every round is played'."""
        if isinstance(data, dict) and "max_turns" not in data:
            rounds = data.get("rounds", 1)
            if isinstance(rounds, int) and not isinstance(rounds, bool):
                return {**data, "max_turns": 2 * rounds}
        return data

    @model_validator(mode="after")
    def _honest_max_turns(self) -> RockPaperScissorsOptions:
        if self.max_turns != 2 * self.rounds:
            raise ValueError(
                f"max_turns={self.max_turns} does not fit rounds={self.rounds}: each round is "
                f"two moves, so leave max_turns out or set it to {2 * self.rounds}."
            )
        return self


class RockPaperScissorsState(GameState):
    played: tuple[tuple[str, str], ...] = ()  # finished rounds: (player_0's move, player_1's)
    pending: str | None = None  # player_0's move in the current round, hidden from player_1


def round_score(mine: str, theirs: str) -> int:
    """+1 if ``mine`` beats ``theirs``, -1 if it loses, 0 for the same move."""
    if mine == theirs:
        return 0
    return 1 if BEATS[mine] == theirs else -1


def random_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    return rng.choice(game.legal_actions(state, role))


def rock_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    return "[rock]"


class RockPaperScissors(Game):
    name = "rock-paper-scissors"
    roles = ROLES
    lists_every_move = True
    description = (
        "Rock-paper-scissors, hidden simultaneous moves; answer [rock], [paper] or [scissors]."
    )
    Options = RockPaperScissorsOptions
    State = RockPaperScissorsState
    answer_hint = "[rock] (rock, paper or scissors in square brackets)"
    players: ClassVar[dict[str, Player]] = {"random": random_player, "rock": rock_player}

    def initial(self, seed: int, rng: random.Random) -> RockPaperScissorsState:
        return RockPaperScissorsState(seed=seed)

    def current_role(self, state: RockPaperScissorsState) -> Role | None:
        if len(state.played) >= self.options.rounds:
            return None
        return "player_0" if state.pending is None else "player_1"

    def prompt(self, state: RockPaperScissorsState, role: Role) -> list[Message]:
        """Only finished rounds are shown; the pending move never is."""
        me = ROLES.index(role)
        lines, score = [], 0
        words = {1: "won", 0: "tie", -1: "lost"}
        for i, moves in enumerate(state.played, start=1):
            result = round_score(moves[me], moves[1 - me])
            score += result
            lines.append(f"round {i}: you {moves[me]}, opponent {moves[1 - me]} ({words[result]})")
        now = f"Round {len(state.played) + 1} of {self.options.rounds}."
        past = f" Results: {'; '.join(lines)}. Your net score: {score:+d}." if lines else ""
        return [
            Message("system", RULES.format(role=role, rounds=self.options.rounds)),
            Message("user", f"{now}{past} Your choice?"),
        ]

    def legal(self, state: RockPaperScissorsState, role: Role, action: str) -> str:
        move = ALIASES.get(read_name(action))
        if move is None:
            raise InvalidAction(
                f"{action[:20]!r} is not a move; answer [rock], [paper] or [scissors]."
            )
        return move

    def apply(
        self, state: RockPaperScissorsState, role: Role, action: str
    ) -> RockPaperScissorsState:
        if state.pending is None:
            return state.model_copy(update={"pending": action})
        played = (*state.played, (state.pending, action))
        return state.model_copy(update={"played": played, "pending": None})

    def result(self, state: RockPaperScissorsState) -> Payoffs | None:
        if len(state.played) < self.options.rounds:
            return None
        net = sum(round_score(a, b) for a, b in state.played)
        sign = float((net > 0) - (net < 0))
        return {"player_0": sign, "player_1": -sign}

    def legal_actions(self, state: RockPaperScissorsState, role: Role) -> list[str]:
        return [f"[{m}]" for m in MOVES]

    # ---- the TabularGame capability (games/tabular.py): the first throw ---------------------

    def information_sets(self) -> list[InfoSet]:
        """player_1's state holds a pending throw its prompt never shows; any one represents all."""
        second = RockPaperScissorsState(seed=0, pending=MOVES[0], turn=1)
        return [
            InfoSet("player_0", "player_0", RockPaperScissorsState(seed=0), MOVES),
            InfoSet("player_1", "player_1", second, MOVES),
        ]

    def exploitability(self, policy: Policy) -> float:
        """NashConv / 2 of the first throw; only the uniform throw gives 0."""
        table = tabular.check_policy(self.information_sets(), policy)
        # Each role's best-response value against the other's throw; zero-sum, so their sum
        # is NashConv.
        gains = [
            max(
                sum(p * round_score(mine, theirs) for theirs, p in table[other].items())
                for mine in MOVES
            )
            for other in ("player_1", "player_0")
        ]
        return float(sum(gains) / 2)

    def average_policy(self, policies: Sequence[Policy], weights: Sequence[float]) -> PolicyTable:
        return tabular.average_policy(self.information_sets(), policies, weights)


@hookimpl
def register_games(register):
    register(RockPaperScissors)
