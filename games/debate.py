"""Debate: two sides argue a question in turn; a judge reward decides who argued better.

The debate-training loop of the self-play textbook. A question is drawn from the shipped bank
(``games/data/debate_questions.jsonl``); ``pro`` argues for its proposition and ``con``
against. The side that opens is drawn from the seed, so neither role always speaks first. The
sides alternate for ``rebuttals + 1`` statements each; every statement after the first sees
the opponent's last argument (and the speaker's own).

Games never call models, so the rules do not decide a winner: a finished debate pays 0 to
both sides and the ``judge`` reward decides. ``reward_defaults`` puts that judge in pairwise
mode, so ``--reward judge`` (or ``judge+quality``) compares the two sides and pays +1 / -1
(0 each on a tie): zero-sum, as in debate training. Both judges pick their verdict line
(``answer: choose``: the likeliest of "Winner: A", "Winner: B", "Winner: tie", or of "Score: 0"
to "Score: 7") rather than write a reply, so even the tiny default model's verdicts are read;
``reward_options.judge.answer=write`` lets a larger judge write first. A reward that needs a
rule outcome (``outcome``) learns nothing here.

A statement is free text, valid when non-empty and at most ``max_chars`` characters (see
games/text_game.py); an empty or overlong statement is an invalid move under the shared
invalid-move rules (by default the side forfeits: -1.5 to it, +0.5 to the other).
"""

from __future__ import annotations

import random
from typing import ClassVar

from pydantic import Field

from selfplay.api.game import GameState
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.text_game import TextGame, TextGameOptions, load_bank, load_prompt
from selfplay.plugins.hookspecs import hookimpl

ROLES = ("pro", "con")
POSITIONS = {"pro": "for", "con": "against"}
BANK = "debate_questions"
CANNED = (  # what random playouts say; any non-empty short text is a legal statement
    "I argue {position} the proposition: the evidence on balance supports my side.",
    "My opponent ignores the costs; weighed fairly, the case {position} it is stronger.",
    "Consider the people most affected: they are better served by my position ({position}).",
)


class DebateOptions(TextGameOptions):
    rebuttals: int = Field(
        default=1, ge=0, le=9, description="Rebuttal rounds after the two opening statements."
    )


class DebateState(GameState):
    question: str
    question_id: str
    first: Role  # the side that opens
    statements: tuple[tuple[Role, str], ...] = ()


class Debate(TextGame):
    name = "debate"
    roles = ROLES
    description = "Two sides argue a question in turn; a pairwise judge reward picks the winner."
    Options = DebateOptions
    State = DebateState
    move_noun = "argument"
    # the judges pick their verdict line rather than write it: any model's verdict is readable
    reward_defaults: ClassVar[dict[str, dict[str, str]]] = {
        "judge": {"mode": "pairwise", "answer": "choose"},
        "quality": {"answer": "choose"},
    }

    def initial(self, seed: int, rng: random.Random) -> DebateState:
        record = rng.choice(load_bank(BANK, self.options.split))
        return DebateState(
            seed=seed,
            question=record["question"],
            question_id=record["id"],
            first=rng.choice(ROLES),
        )

    def statements_each(self) -> int:
        return self.options.rebuttals + 1

    def current_role(self, state: DebateState) -> Role | None:
        if len(state.statements) >= 2 * self.statements_each():
            return None
        second = ROLES[1 - ROLES.index(state.first)]
        return state.first if len(state.statements) % 2 == 0 else second

    def prompt(self, state: DebateState, role: Role) -> list[Message]:
        own, opponent = _last(state, role), _last(state, ROLES[1 - ROLES.index(role)])
        template = "opening" if opponent is None else "reply" if own is None else "rebuttal"
        spoken = sum(r == role for r, _ in state.statements)
        user = load_prompt(self.name, template).substitute(
            question=state.question,
            number=str(spoken + 1),
            total=str(self.statements_each()),
            own=own or "",
            opponent=opponent or "",
        )
        system = load_prompt(self.name, "system").substitute(
            side=role, position=POSITIONS[role], max_chars=str(self.options.max_chars)
        )
        return [Message("system", system), Message("user", user)]

    def apply(self, state: DebateState, role: Role, action: str) -> DebateState:
        return state.model_copy(update={"statements": (*state.statements, (role, action))})

    def result(self, state: DebateState) -> Payoffs | None:
        """0 to both once every statement is made: the judge reward decides (see above)."""
        return None if self.current_role(state) is not None else dict.fromkeys(ROLES, 0.0)

    def legal_actions(self, state: DebateState, role: Role) -> list[str]:
        return [text.format(position=POSITIONS[role]) for text in CANNED]


def _last(state: DebateState, role: Role) -> str | None:
    said = [text for r, text in state.statements if r == role]
    return said[-1] if said else None


@hookimpl
def register_games(register):
    register(Debate)
