"""Challenger / solver: Language Self-Play's game (Kuba et al., 2025).

The challenger turns a short theme from the shipped bank
(``games/data/instruction_seeds.jsonl``) into an instruction or question; the solver then
answers it ``answers`` (G) times. Each answer sees only the question, never the other answers,
so the G solver turns share one prompt: a GRPO group.

Games never call models, so the rules decide nothing: a finished match pays 0 to both roles.
The rewards do the scoring: ``reward_defaults`` makes the ``judge`` rate each turn on its own
(``scope=turn``), so every answer gets its own score (the challenger's question is rated too,
which the ``lsp`` estimator ignores), and ``quality`` rates the interaction for both roles.
Both choose their verdict line ("Score: N") rather than write it (``answer: choose``), so even
the tiny default model's ratings are read; ``reward_options.judge.answer=write`` lets a larger
judge write first.
The intended command is

    selfplay run --game challenger-solver --reward judge+quality --estimator lsp

where ``lsp`` (core/algorithms/lsp.py) gives the solver a group-relative advantage and the
challenger -V(q) + V_Q(q) - baseline. The question and answers are free text (see
games/text_game.py): an empty or overlong one is an invalid move.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from pydantic import Field

from selfplay.api.game import GameState
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.text_game import TextGame, TextGameOptions, load_bank, load_prompt
from selfplay.plugins.hookspecs import hookimpl

ROLES = ("challenger", "solver")
BANK = "instruction_seeds"
CANNED = {  # what random playouts write; any non-empty short text is a legal move
    "challenger": (
        "Explain why the sky looks blue during the day but red at sunset.",
        "List three differences between a virus and a bacterium.",
    ),
    "solver": (
        "Sunlight scatters off air molecules, and blue light scatters most.",
        "I am not sure, but here is my best attempt at an answer.",
    ),
}


class ChallengerSolverOptions(TextGameOptions):
    answers: int = Field(
        default=4, ge=1, le=64, description="Answers (G) the solver gives to each question."
    )
    max_turns: int = Field(
        default=65, ge=2, description="Moves after which the match ends (question + answers)."
    )


class ChallengerSolverState(GameState):
    theme: str
    theme_id: str
    question: str | None = None
    answers: tuple[str, ...] = ()


class ChallengerSolver(TextGame):
    name = "challenger-solver"
    roles = ROLES
    description = (
        "Language Self-Play: a challenger writes a task from a theme; the solver answers it "
        "G times (use --estimator lsp)."
    )
    Options = ChallengerSolverOptions
    State = ChallengerSolverState
    zero_sum = False
    move_noun = "text"
    # the judges pick their verdict line rather than write it: any model's verdict is read
    reward_defaults: ClassVar[dict[str, dict[str, Any]]] = {
        "judge": {"scope": "turn", "answer": "choose"},
        "quality": {"answer": "choose"},
    }

    def initial(self, seed: int, rng: random.Random) -> ChallengerSolverState:
        record = rng.choice(load_bank(BANK, self.options.split))
        return ChallengerSolverState(seed=seed, theme=record["theme"], theme_id=record["id"])

    def current_role(self, state: ChallengerSolverState) -> Role | None:
        if state.question is None:
            return "challenger"
        return "solver" if len(state.answers) < self.options.answers else None

    def prompt(self, state: ChallengerSolverState, role: Role) -> list[Message]:
        limit = str(self.options.max_chars)
        if role == "challenger":
            task = load_prompt("challenger_solver", "challenger")
            return [Message("user", task.substitute(theme=state.theme, max_chars=limit))]
        system = load_prompt("challenger_solver", "solver").substitute(max_chars=limit)
        return [Message("system", system), Message("user", state.question or "")]

    def apply(self, state: ChallengerSolverState, role: Role, action: str) -> GameState:
        if role == "challenger":
            return state.model_copy(update={"question": action})
        return state.model_copy(update={"answers": (*state.answers, action)})

    def result(self, state: ChallengerSolverState) -> Payoffs | None:
        """0 to both once every answer is in: the rewards score the match (see above)."""
        return None if self.current_role(state) is not None else dict.fromkeys(ROLES, 0.0)

    def legal_actions(self, state: ChallengerSolverState, role: Role) -> list[str]:
        return list(CANNED[role])

    def signals(self, state: ChallengerSolverState) -> dict[str, float]:
        lengths = [len(a) for a in state.answers]
        return {
            **super().signals(state),
            "question_chars": float(len(state.question or "")),
            "answer_chars": sum(lengths) / len(lengths) if lengths else 0.0,
        }


@hookimpl
def register_games(register):
    register(ChallengerSolver)
