"""Proposer/solver/judge (the seed write-up's three-role loop), with a difficulty controller.

Three seats of one policy, all trained:

- the proposer turns a seed problem from the bank into a variant (changed numbers or
  conditions, distracting information) at the requested difficulty and states the variant's
  answer: ``[problem: ... answer: ...]``;
- the solver answers step by step and ends with ``[answer]``; the math verifier checks it
  against the proposer's answer (a verifier timeout/error voids the match, 0 to all);
- the judge reads the variant and the end of the solver's reply (never the reference
  answer: it must check the work, not compare two strings, which the verifier already does)
  and says ``[correct]`` or ``[incorrect]``.

Payoffs: solved → solver +1, proposer −1, otherwise the reverse; the judge 1 when its
verdict agrees with the truth, else 0. The truth is the verifier's verdict, and on a share
``calibration`` (0.1) of matches, drawn from each match's seed, a person's label: those
matches start at the judge's turn on a labelled candidate answer from
``games/data/judge_calibration.jsonl`` and pay the other seats 0. This is judged-solver's
calibration mechanism (seed 004: keep about 10% human-checked items, because a judge and a
solver of the same origin shield each other); `judged-solver` stays as the two-role form.
The judge's agreement with the 20 held-out labels is measured after every iteration
(``eval/judge/accuracy``; the ``judge`` task split).

``solver_reward: judge`` makes the judge's verdict, not the verifier's, decide the solver's
and the proposer's payoffs (the judge is still paid for agreeing with the truth), so the
shielding failure can be measured rather than assumed: ``judge_false_pass`` (the judge
passed an answer the verifier failed) and the held-out solver accuracy, which the verifier
still decides, show it.

An LLM judge reward can still grade the solver's rigor against the proposer's reference
(``--reward outcome+judge@solver=0.5``; the game makes its template ``judge_rigor``, or the
shorter ``judge_rigor_compact`` for a model that cannot read the long one). With
``--set callbacks=[task-schedule]`` the requested difficulty follows the solver's win rate
(×1.2 above 70%, ×0.8 below 30%; ``difficulty_signal: elo`` reads the Elo ratings' expected
score instead), fresh seed problems join every 10 iterations (5% of the bank) and seeds are
drawn by the pass-rate curriculum; see `selfplay.games.proposers.task_schedule`.

Options ``max_questions`` (0 here) and ``validity_check`` (off here) are shared with
math-proposer-solver and may be turned on; so is noise injection (``noise``).
"""

from __future__ import annotations

import random
from typing import Any, ClassVar, Literal

from pydantic import Field

from selfplay.api.game import Game, Player
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.banks import load_bank
from selfplay.games.judged_solver import (
    JUDGE_ASK,
    VERDICTS,
    calibration_item,
    held_out_items,
    judge_verdict,
    labelled_fields,
    truth_of,
)
from selfplay.games.proposers.computed import match_payoffs
from selfplay.games.proposers.math_players import random_player
from selfplay.games.proposers.math_proposer_solver import MathProposerSolverOptions
from selfplay.games.proposers.math_tasks import PROPOSAL_FORMAT
from selfplay.games.proposers.proposer_solver import ProposerSolverGame, ProposerSolverState
from selfplay.games.proposers.task_schedule import TaskSchedule
from selfplay.plugins.hookspecs import hookimpl

PROPOSER, SOLVER, JUDGE = "proposer", "solver", "judge"
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
    difficulty_signal: Literal["win_rate", "elo"] = Field(
        default="win_rate",
        description="What the difficulty band reads (task-schedule callback): the last "
        "iteration's solver win rate, or the solver's expected score from the proposer's and "
        "solver's Elo ratings (seed 004's table).",
    )
    elo_k: float = Field(default=16.0, gt=0, description="K-factor of those Elo ratings.")
    calibration: float = Field(
        default=0.1, ge=0, le=1, description="Share of matches the judge rates a labelled item."
    )
    shown_chars: int = Field(
        default=400, ge=1, description="The judge reads the last N characters of the reply."
    )
    solver_reward: Literal["verifier", "judge"] = Field(
        default="verifier",
        description="Whose verdict decides the solver's and proposer's payoffs: the verifier's, "
        "or the trained judge's (to measure how a judge shields its solver).",
    )

    def judge_moves(self) -> int:
        return 1


class ProposerSolverJudgeState(ProposerSolverState):
    difficulty: float = 1.0  # what the proposer was asked for
    seed_id: str = ""
    label: str | None = None  # a person's verdict on ``shown``: a calibration match
    shown: str | None = None  # what the judge reads of the solver's reply
    judged: str | None = None  # the judge's verdict: correct or incorrect


def player(game: Game, state: ProposerSolverJudgeState, role: Role, rng: random.Random) -> str:
    """The proposer games' random player, and a judge that guesses."""
    if role == JUDGE:
        return f"[{rng.choice(VERDICTS)}]"
    return random_player(game, state, role, rng)


class ProposerSolverJudge(ProposerSolverGame):
    name = "proposer-solver-judge"
    description = (
        "The proposer varies a bank problem at a requested difficulty; the solver answers step "
        "by step; the verifier decides; a trained judge says [correct] or [incorrect], paid "
        "for agreeing with the verifier and, on ~10% of matches, with human labels."
    )
    roles = (PROPOSER, SOLVER, JUDGE)
    Options = ProposerSolverJudgeOptions
    State = ProposerSolverJudgeState
    players: ClassVar[dict[str, Player]] = {"random": player}
    reward_defaults: ClassVar[dict[str, dict[str, Any]]] = {"judge": {"template": "judge_rigor"}}
    task_roles: ClassVar[dict[str, Role]] = {"judge": JUDGE}
    iteration_splits: ClassVar[tuple[str, ...]] = ("judge",)

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
            signal=opts.difficulty_signal,
            elo_k=opts.elo_k,
        )

    def initial(self, seed: int, rng: random.Random) -> ProposerSolverJudgeState:
        if item := calibration_item(rng, self.options.calibration):
            return self._labelled(seed, item)
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

    def _labelled(self, seed: int, item: dict[str, Any]) -> ProposerSolverJudgeState:
        """A calibration match: it starts at the judge's turn on a person-labelled answer."""
        fields = labelled_fields(item)
        return ProposerSolverJudgeState(
            seed=seed,
            topic="calibration",
            level=0,
            seed_problem=fields["problem"],
            seed_answer=fields["answer"],
            seed_id=item["id"],
            phase="judge",
            **fields,
        )

    def propose_prompt(self, state: ProposerSolverJudgeState) -> list[Message]:
        user = (
            f"Seed problem ({state.topic}, level {state.level}): {state.seed_problem}\n"
            f"Seed answer: {state.seed_answer}\nYour variant:"
        )
        rules = RULES.format(difficulty=state.difficulty)
        return [Message("system", rules), Message("user", user)]

    # ---- the judge's seat ------------------------------------------------------------------

    def current_role(self, state: ProposerSolverJudgeState) -> Role | None:
        return JUDGE if state.phase == "judge" else super().current_role(state)

    def prompt(self, state: ProposerSolverJudgeState, role: Role) -> list[Message]:
        if state.phase == "judge":
            ask = JUDGE_ASK.format(problem=state.problem, answer=state.shown or "")
            return [Message("user", ask)]
        return super().prompt(state, role)

    def legal(self, state: ProposerSolverJudgeState, role: Role, action: str) -> str:
        if state.phase == "judge":
            return judge_verdict(action)
        return super().legal(state, role, action)

    def apply(
        self, state: ProposerSolverJudgeState, role: Role, action: str
    ) -> ProposerSolverJudgeState:
        if state.phase == "judge":
            return state.model_copy(update={"judged": action, "phase": "done"})
        moved = super().apply(state, role, action)
        if moved.phase == "done" and moved.verdict is not None and moved.void is None:
            return moved.model_copy(update={"phase": "judge"})  # a decided answer: judge it
        return moved

    def judge(
        self, state: ProposerSolverJudgeState, role: Role, text: str
    ) -> tuple[ProposerSolverJudgeState, str | None]:
        """`step`, also keeping the end of the solver's reply for the judge to read."""
        moved, action = super().judge(state, role, text)
        if role == SOLVER and moved.phase == "judge":
            moved = moved.model_copy(update={"shown": text.strip()[-self.options.shown_chars :]})
        return moved, action

    def truth(self, state: ProposerSolverJudgeState) -> str | None:
        """What the judge should say: the label, else the verifier's view; None if void."""
        return truth_of(state.label, state.verdict)

    def result(self, state: ProposerSolverJudgeState) -> Payoffs | None:
        if state.phase != "done":
            return None
        agreed = float(state.judged is not None and state.judged == self.truth(state))
        if state.label is not None:
            return {PROPOSER: 0.0, SOLVER: 0.0, JUDGE: agreed}
        payoffs = super().result(state)
        assert payoffs is not None
        if state.void is None and state.verdict is not None:
            solved = (
                state.judged == "correct"
                if self.options.solver_reward == "judge"
                else state.verdict == "pass"
            )
            payoffs = match_payoffs(state, solved, self.options.invalid_problem_payoff)
        return {**payoffs, JUDGE: agreed}

    def legal_actions(self, state: ProposerSolverJudgeState, role: Role) -> list[str]:
        if state.phase == "judge":
            return [f"[{v}]" for v in VERDICTS]
        return super().legal_actions(state, role)

    def signals(self, state: ProposerSolverJudgeState) -> dict[str, float]:
        judged, truth = state.judged, self.truth(state)
        return {
            **super().signals(state),
            "calibration": float(state.label is not None),
            "judge_agreed": float(judged is not None and judged == truth),
            "judge_said_correct": float(judged == "correct"),
            "judge_false_pass": float(judged == "correct" and truth == "incorrect"),
        }

    # ---- tasks: the solver on bank problems, the judge on held-out labels ------------------

    def task_states(self, split: str, limit: int, seed: int) -> list[ProposerSolverJudgeState]:
        if split == "judge":
            items = held_out_items(limit, seed)
            return [self._labelled(i, item) for i, item in enumerate(items)]
        return super().task_states(split, limit, seed)

    def task_reply(self, state: ProposerSolverJudgeState, role: Role) -> str:
        """The proposer declines questions; the judge's verdict in a solver task is not read."""
        return "[correct]" if role == JUDGE else "[decline]"

    def task_solved(self, state: ProposerSolverJudgeState) -> bool | None:
        if state.label is not None:
            return state.judged == state.label
        return super().task_solved(state)


@hookimpl
def register_games(register):
    register(ProposerSolverJudge)
