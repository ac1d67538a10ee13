"""Judged solver: a solver answers a bank problem, a trained judge says whether it is right.

Seed 004's third role, trained rather than frozen. The solver answers a maths problem from
the shipped banks (``[answer]``); the judge reads the problem and the solver's answer (never
the reference answer) and gives a verdict, ``[correct]`` or ``[incorrect]``. Both roles are
played by the learner and both are trained:

- the solver is rewarded for correctness: the math verifier's verdict on its answer;
- the judge is rewarded for agreement: with the verifier on ordinary matches, and with a
  person's label on the calibration matches. Seed 004 warns that a judge and a solver from
  one model "cover for each other", and keeps about 10% of judged items human-labelled to
  check the judge; here a share ``calibration`` of matches (drawn from each match's seed)
  shows the judge a labelled item instead of the solver's answer, and has no solver turn.

The labelled items are ``games/data/judge_calibration.jsonl``: 60 problems with a candidate
answer and a label (``correct`` / ``incorrect``), written by this project for calibration,
not taken from any data set. Some candidates are right, some subtly wrong (an order of
operations, a sign, an inverted fraction, the discount instead of the price), some right or
wrong in forms the verifier does not read as a person does (``[3 1/2]``, ``[thirty]``,
``[72 km per hour]``, an unsimplified ``[6/8]`` where simplifying was asked); the label is
the person's view. 40 are ``train`` (the calibration matches), 20 ``heldout``.

Every turn's verdict is kept in the state (``verdicts``): the solver's from the verifier
(pass, fail, timeout, error, invalid); the judge's ``pass`` when it agreed, ``fail`` when it
did not, ``error`` when nothing can be agreed with (the verifier timed out on the solver's
answer). The game's default reward, ``verdict``, pays each turn 1 for ``pass`` and 0
otherwise, and masks ``error``; ``verdict@judge=2`` and the like weigh the roles. The payoff
of a match is the same: solver 1 when its answer passed, judge 1 when it agreed.

As a `TaskGame` the judge is measured greedily on the held-out labelled items: ``eval.every``
logs its agreement with the labels as ``eval/held_out/accuracy``.

The calibration mechanism (`calibration_item`, `held_out_items`, `judge_verdict`,
`truth_of`, `labelled_fields`) is shared with proposer-solver-judge, whose judge seat is
trained the same way inside the three-role game.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from pydantic import Field, field_validator

from selfplay.api.game import Game, GameOptions, GameState, InvalidAction, Player
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.banks import TRAINING_TOPICS, Problem, load_bank
from selfplay.games.move_names import read_name
from selfplay.games.text_game import load_bank as load_records
from selfplay.games.verified import game_verifier
from selfplay.plugins.hookspecs import hookimpl

SOLVER, JUDGE = "solver", "judge"
CALIBRATION = "judge_calibration"
VERDICTS = ("correct", "incorrect")
ASK = "Solve: {problem} Answer as [number]."
# Short, and the question last: a small model's context keeps a prompt's end.
JUDGE_ASK = (
    "You judge. Problem: {problem}\nA solver answered: {answer}\n"
    "Is its final answer correct? Reply [correct] or [incorrect]."
)


class JudgedSolverOptions(GameOptions):
    topics: list[str] = Field(
        default_factory=lambda: list(TRAINING_TOPICS), description="Bank topics drawn from."
    )
    calibration: float = Field(
        default=0.1, ge=0, le=1, description="Share of matches the judge sees a labelled item."
    )
    shown_chars: int = Field(
        default=400, ge=1, description="The judge reads the last N characters of the answer."
    )
    verifier: str = Field(default="math", description="Registered verifier deciding answers.")
    verifier_options: dict[str, Any] = Field(
        default_factory=dict, description="Options of the verifier, e.g. {timeout: 5}."
    )
    max_turns: int = Field(default=8, ge=2, description="Moves after which the match ends.")

    @field_validator("topics")
    @classmethod
    def _trainable(cls, topics: list[str]) -> list[str]:
        if not topics or set(topics) - set(TRAINING_TOPICS):
            raise ValueError(f"topics are some of {', '.join(TRAINING_TOPICS)}; got {topics}.")
        return topics


class JudgedSolverState(GameState):
    item_id: str  # a bank problem's id, or a labelled item's
    problem: str
    answer: str
    solution: str = ""
    label: str | None = None  # a person's verdict on ``shown``: a calibration match
    shown: str | None = None  # the answer the judge reads (None until the solver answered)
    solver_verdict: str | None = None  # the verifier's: pass, fail, timeout or error
    verdict: str | None = None  # the judge's: correct or incorrect
    verdicts: tuple[str, ...] = ()  # one per turn, for the verdict reward


def random_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    """A solver right half the time, a judge that guesses: they teach the two formats."""
    if role == JUDGE:
        return f"[{rng.choice(VERDICTS)}]"
    return f"[{state.answer}]" if rng.random() < 0.5 else f"[{state.answer}1]"


def oracle_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    """The bank's worked solution; a judge that always agrees with the truth."""
    if role == JUDGE:
        return f"[{game.truth(state) or 'correct'}]"
    return state.solution or f"[{state.answer}]"


class JudgedSolver(Game):
    name = "judged-solver"
    roles = (SOLVER, JUDGE)
    description = (
        "A solver answers a bank maths problem; a trained judge says [correct] or "
        "[incorrect], rewarded by agreement with the verifier and, on ~10% of matches, "
        "with human labels."
    )
    Options = JudgedSolverOptions
    State = JudgedSolverState
    zero_sum = False
    answer_hint = "[answer]"
    players: ClassVar[dict[str, Player]] = {"random": random_player, "oracle": oracle_player}
    uses_verifier = True
    default_reward = "verdict"
    task_role = JUDGE

    def initial(self, seed: int, rng: random.Random) -> JudgedSolverState:
        if item := calibration_item(rng, self.options.calibration):
            return _labelled(seed, item)
        problem: Problem = rng.choice(
            [p for topic in self.options.topics for p in load_bank(topic, "train")]
        )
        return JudgedSolverState(
            seed=seed,
            item_id=problem.id,
            problem=problem.problem,
            answer=problem.answer,
            solution=problem.solution,
        )

    def current_role(self, state: JudgedSolverState) -> Role | None:
        if state.shown is None:
            return SOLVER
        return JUDGE if state.verdict is None else None

    def prompt(self, state: JudgedSolverState, role: Role) -> list[Message]:
        if role == JUDGE:
            shown = state.shown or ""
            return [Message("user", JUDGE_ASK.format(problem=state.problem, answer=shown))]
        return [Message("user", ASK.format(problem=state.problem))]

    def legal(self, state: JudgedSolverState, role: Role, action: str) -> str:
        action = action.strip()
        if role == JUDGE:
            return judge_verdict(action)
        if not action:
            raise InvalidAction("the answer in brackets is empty; write e.g. [42].")
        return action

    def apply(self, state: JudgedSolverState, role: Role, action: str) -> JudgedSolverState:
        if role == JUDGE:
            return state.model_copy(update={"verdict": action})
        return state

    def judge(
        self, state: JudgedSolverState, role: Role, text: str
    ) -> tuple[JudgedSolverState, str | None]:
        """`step`, also keeping what the judge will read and this turn's verdict."""
        moved, action = super().judge(state, role, text)
        if action is None:
            verdict = "invalid"
        elif role == SOLVER:
            verdict = self.verify(action, state.answer)
            shown = text.strip()[-self.options.shown_chars :]
            moved = moved.model_copy(update={"shown": shown, "solver_verdict": verdict})
        else:
            truth = self.truth(state)
            verdict = "error" if truth is None else ("pass" if action == truth else "fail")
        return moved.model_copy(update={"verdicts": (*moved.verdicts, verdict)}), action

    def verify(self, candidate: str, reference: str) -> str:
        """The verifier's status: pass, fail, timeout or error."""
        return game_verifier(self).verify(candidate, reference).status

    def truth(self, state: JudgedSolverState) -> str | None:
        """What the judge should say: the label, else the verifier's view; None if void."""
        return truth_of(state.label, state.solver_verdict)

    def result(self, state: JudgedSolverState) -> Payoffs | None:
        if self.current_role(state) is not None:
            return None
        agreed = state.verdict is not None and state.verdict == self.truth(state)
        return {SOLVER: float(state.solver_verdict == "pass"), JUDGE: float(agreed)}

    def legal_actions(self, state: JudgedSolverState, role: Role) -> list[str]:
        if role == JUDGE:
            return [f"[{v}]" for v in VERDICTS]
        return [f"[{state.answer}]", f"[{state.answer}1]"]

    def signals(self, state: JudgedSolverState) -> dict[str, float]:
        return {
            **super().signals(state),
            "calibration": float(state.label is not None),
            "solver_passed": float(state.solver_verdict == "pass"),
            "judge_agreed": float(state.verdict is not None and state.verdict == self.truth(state)),
        }

    # ---- the TaskGame capability: the judge on held-out labelled items ---------------------

    def task_states(self, split: str, limit: int, seed: int) -> list[JudgedSolverState]:
        if split != "held_out":
            return []
        return [_labelled(i, item) for i, item in enumerate(held_out_items(limit, seed))]

    def task_reply(self, state: JudgedSolverState, role: Role) -> str:
        raise ValueError("judged-solver tasks start at the judge's turn; the solver never acts.")

    def task_solved(self, state: JudgedSolverState) -> bool | None:
        return state.verdict is not None and state.verdict == state.label


def calibration_item(rng: random.Random, share: float) -> dict[str, Any] | None:
    """A person-labelled training item on a ``share`` of draws (none when the share is 0)."""
    if share <= 0 or rng.random() >= share:
        return None
    return rng.choice(load_records(CALIBRATION, "train"))


def held_out_items(limit: int, seed: int) -> list[dict[str, Any]]:
    """Up to ``limit`` held-out labelled items, the same ones for the same seed."""
    items = list(load_records(CALIBRATION, "heldout"))
    random.Random(f"selfplay-tasks-{seed}").shuffle(items)
    return items[:limit]


def judge_verdict(action: str) -> str:
    """A judge's move, ``correct`` or ``incorrect``; anything else is an invalid move."""
    verdict = read_name(action)
    if verdict not in VERDICTS:
        raise InvalidAction(f"the verdict is [correct] or [incorrect], not [{action}].")
    return verdict


def truth_of(label: str | None, verifier_status: str | None) -> str | None:
    """What a judge should say: a person's label, else the verifier's view; None if void."""
    if label is not None:
        return label
    return {"pass": "correct", "fail": "incorrect"}.get(verifier_status or "")


def labelled_fields(item: dict[str, Any]) -> dict[str, Any]:
    """The state fields of a match that starts at the judge's turn on a labelled item."""
    return {
        "problem": item["problem"],
        "answer": item["answer"],
        "label": item["label"],
        "shown": item["candidate"],
    }


def _labelled(seed: int, item: dict[str, Any]) -> JudgedSolverState:
    """A match that starts at the judge's turn, on a person-labelled candidate answer."""
    return JudgedSolverState(seed=seed, item_id=item["id"], **labelled_fields(item))


@hookimpl
def register_games(register):
    register(JudgedSolver)
