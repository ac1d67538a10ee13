"""Proposer/solver/judge (the seed write-up's three-role loop), with a difficulty controller.

The proposer turns a seed problem from the bank into a variant (changed numbers or
conditions, distracting information) at the requested difficulty and states the variant's
answer: ``[problem: ... answer: ...]``. The solver answers step by step and ends with
``[answer]``. The game's own outcome is the math verifier's: solved → solver +1, proposer
−1, otherwise the reverse; a verifier timeout/error voids the match (0 to both). The judge —
an LLM, so a reward, never part of the game — compares the solver's work with the proposer's
reference answer and grades its rigor. The recommended reward is::

    --reward outcome+judge@solver=0.5 --set reward_options.judge.template=judge_rigor

(``judge_rigor`` is a shipped judge template; the judge reads the whole match, in which the
proposer states the reference answer). With ``--set callbacks=[task-schedule]`` the requested
difficulty follows the solver's win rate (×1.2 above 70%, ×0.8 below 30%), fresh seed
problems join every 10 iterations (5% of the bank) and seeds are drawn by the pass-rate
curriculum; see `selfplay.games.proposers.task_schedule`. Without the callback the
difficulty stays at ``difficulty`` and the seed pool at its start.

Options ``max_questions`` (0 here) and ``validity_check`` (off here) are shared with
math-proposer-solver and may be turned on.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import Field

from selfplay.api.types import Message
from selfplay.games.banks import load_bank
from selfplay.games.proposers.math_proposer_solver import MathProposerSolverOptions
from selfplay.games.proposers.math_tasks import PROPOSAL_FORMAT
from selfplay.games.proposers.proposer_solver import ProposerSolverGame, ProposerSolverState
from selfplay.games.proposers.task_schedule import TaskSchedule
from selfplay.plugins.hookspecs import hookimpl

RULES = (
    "You are the proposer. Rewrite the seed problem into a new variant for the solver: change "
    "its numbers or conditions, and you may add distracting information. The variant must have "
    "exactly one answer, and you must give it. Requested difficulty: {difficulty:.2f} (1 = like "
    "the seed, higher = harder). Answer in one pair of square brackets, with no square "
    "brackets inside: " + PROPOSAL_FORMAT + "."
)


class ProposerSolverJudgeOptions(MathProposerSolverOptions):
    max_questions: int = Field(default=0, ge=0, le=8, description="Clarifying questions.")
    validity_check: bool = Field(
        default=False, description="The proposer must solve its own variant for it to count."
    )
    difficulty: float = Field(default=1.0, gt=0, description="Starting requested difficulty.")
    initial_fraction: float = Field(
        default=0.5, gt=0, le=1, description="Share of the training bank in the first seed pool."
    )
    inject_every: int = Field(
        default=10, ge=0, description="Add fresh seed problems every n iterations (0 = never)."
    )
    inject_fraction: float = Field(
        default=0.05, ge=0, le=1, description="Share of the bank added at each injection."
    )
    curriculum_floor: float = Field(
        default=0.05, gt=0, le=1, description="Floor of (1 - pass rate) in the seed curriculum."
    )


class ProposerSolverJudgeState(ProposerSolverState):
    difficulty: float = 1.0  # what the proposer was asked for
    seed_id: str = ""


class ProposerSolverJudge(ProposerSolverGame):
    name = "proposer-solver-judge"
    description = (
        "The proposer varies a bank problem at a requested difficulty; the solver answers step "
        "by step; the verifier decides, a judge reward grades rigor."
    )
    Options = ProposerSolverJudgeOptions
    State = ProposerSolverJudgeState

    def __init__(self, options: Any = None, rules: Any = None, **context: Any) -> None:
        super().__init__(options, rules, **context)
        opts = self.options
        self.schedule = TaskSchedule(
            [p for t in opts.topics for p in load_bank(t, "train")],
            difficulty=opts.difficulty,
            initial_fraction=opts.initial_fraction,
            inject_every=opts.inject_every,
            inject_fraction=opts.inject_fraction,
            floor=opts.curriculum_floor,
        )

    def initial(self, seed: int, rng: random.Random) -> ProposerSolverJudgeState:
        seed_problem = self.schedule.choose(rng)
        return ProposerSolverJudgeState(
            seed=seed,
            topic=seed_problem.topic,
            level=seed_problem.level,
            seed_problem=seed_problem.problem,
            seed_answer=seed_problem.answer,
            seed_id=seed_problem.id,
            difficulty=round(self.schedule.difficulty, 4),
        )

    def propose_prompt(self, state: ProposerSolverJudgeState) -> list[Message]:
        user = (
            f"Seed problem ({state.topic}, level {state.level}): {state.seed_problem}\n"
            f"Seed answer: {state.seed_answer}\nYour variant:"
        )
        rules = RULES.format(difficulty=state.difficulty)
        return [Message("system", rules), Message("user", user)]


@hookimpl
def register_games(register):
    register(ProposerSolverJudge)
