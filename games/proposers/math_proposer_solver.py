"""Math proposer/solver (the SPIRAL write-up's example), decided by the math verifier.

The proposer writes a problem on a topic with its answer, ``[problem: ... answer: ...]``; it
sees one problem of the topic from the shipped bank as an example of the form. It must then
solve its own problem again without seeing its answer (the validity check); a problem it
cannot solve is invalid and pays it −1, the solver 0. The solver may ask up to
``max_questions`` clarifying questions (``[ask: ...]``), which the proposer answers
(``[reply: ...]``) or declines; questions asked are the game's ``questions`` signal (hint
requests, for a game-signal reward). The solver's final answer, ``[42]``, is checked by the
verifier against the proposer's answer: solved → solver +1, proposer −1; otherwise the
reverse. See `selfplay.games.proposers.proposer_solver` for the full rules and the void match.

Topics come from the training part of the bank (``topics``: the training topics by default,
or the one-digit ``sums`` for small models); the transfer topic (percentages) is never
offered, so the ``transfer`` split of the task evaluation (selfplay.api.tasks) measures
transfer, and the ``held_out`` split holds back problems of the topics trained on.
"""

from __future__ import annotations

import random

from pydantic import Field, field_validator

from selfplay.api.types import Message
from selfplay.games.banks import TRAINING_TOPICS, TRANSFER_TOPIC, WARM_UP_TOPICS, load_bank
from selfplay.games.proposers.math_tasks import PROPOSAL_FORMAT, format_proposal
from selfplay.games.proposers.proposer_solver import (
    ProposerSolverGame,
    ProposerSolverOptions,
    ProposerSolverState,
)
from selfplay.plugins.hookspecs import hookimpl

RULES = (
    "You are the proposer in a maths game. Write one new {topic} problem that has exactly one "
    "answer, and give that answer. You win if the solver gets it wrong, but you must be able "
    "to solve it yourself: a problem you cannot solve loses. Answer in one pair of square "
    "brackets, with no square brackets inside: " + PROPOSAL_FORMAT + "."
)


class MathProposerSolverOptions(ProposerSolverOptions):
    topics: tuple[str, ...] = Field(
        default=TRAINING_TOPICS, min_length=1, description="Bank topics the proposer writes on."
    )

    @field_validator("topics")
    @classmethod
    def _training_topics(cls, topics: tuple[str, ...]) -> tuple[str, ...]:
        allowed = (*TRAINING_TOPICS, *WARM_UP_TOPICS)
        bad = [t for t in topics if t not in allowed]
        if bad:
            why = " (kept for the transfer check)" if TRANSFER_TOPIC in bad else ""
            raise ValueError(
                f"topics {bad} cannot be trained on{why}; choose from {list(allowed)}."
            )
        return topics


class MathProposerSolver(ProposerSolverGame):
    name = "math-proposer-solver"
    description = (
        "The proposer writes a maths problem with its answer and must solve it again; the "
        "solver may ask clarifying questions; the math verifier decides."
    )
    Options = MathProposerSolverOptions

    def initial(self, seed: int, rng: random.Random) -> ProposerSolverState:
        topic = rng.choice(self.options.topics)
        example = rng.choice(load_bank(topic, "train"))
        return ProposerSolverState(
            seed=seed,
            topic=topic,
            level=example.level,
            seed_problem=example.problem,
            seed_answer=example.answer,
        )

    def propose_prompt(self, state: ProposerSolverState) -> list[Message]:
        example = format_proposal(state.seed_problem, state.seed_answer)
        user = (
            f"Topic: {state.topic}. The solver may ask you up to {self.options.max_questions} "
            f"questions.\nAn example of the form: {example}\nYour problem:"
        )
        return [Message("system", RULES.format(topic=state.topic)), Message("user", user)]


@hookimpl
def register_games(register):
    register(MathProposerSolver)
