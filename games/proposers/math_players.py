"""The scripted players of the maths proposer games: ``random`` and ``solution``, the
demonstrator a cold start learns the format (and, under ``new_problems``, new problems) from."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from selfplay.api.types import Role
from selfplay.games.proposers.computed import varied
from selfplay.games.proposers.math_tasks import format_proposal, wrong_answer

if TYPE_CHECKING:
    from selfplay.games.proposers.proposer_solver import ProposerSolverGame, ProposerSolverState


def random_player(
    game: ProposerSolverGame, state: ProposerSolverState, role: Role, rng: random.Random
) -> str:
    """Proposes the seed problem (a wrong answer 1 time in 5), solves it, guesses half right."""
    if state.phase == "propose":
        answer = state.seed_answer if rng.random() < 0.8 else wrong_answer(state.seed_answer)
        return format_proposal(state.seed_problem, answer)
    if state.phase == "check":
        return f"[{state.answer}]"
    if state.phase == "reply":
        return "[decline]" if rng.random() < 0.5 else "[reply: the answer is a number]"
    asked = len(state.questions)
    if asked < game.options.max_questions and rng.random() < 0.25:
        return "[ask: may the answer be a fraction?]"
    return f"[{state.answer}]" if rng.random() < 0.5 else f"[{wrong_answer(state.answer)}]"


def solution_player(
    game: ProposerSolverGame, state: ProposerSolverState, role: Role, rng: random.Random
) -> str:
    """Always right: proposes the example problem with its bank answer (under new_problems,
    with other numbers where the game works it out, never a held-out problem), solves it,
    declines questions and answers the problem it was set (a demonstrator for a cold start)."""
    if state.phase == "propose":
        new = game.options.new_problems and varied(state.seed_problem, rng, game.old(state))
        return format_proposal(*(new or (state.seed_problem, state.seed_answer)))
    if state.phase == "reply":
        return "[decline]"
    return f"[{state.answer}]"
