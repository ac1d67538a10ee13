"""Math solver: one role answers a bank problem ``answers`` (G) times; the verifier decides each.

The single-turn task GRPO users know, and the ground on which the preference and imitation
objectives are shown: every answer of a problem sees the same prompt (a GRPO group, a set of
candidates for a DPO pair), and every answer has its own verdict, kept in the state
(``verdicts``, one per turn, ``invalid`` for an attempt the rules rejected). The game's
default reward, ``verdict``, pays each answer 1 when the math verifier passes it and 0
otherwise; the match's payoff is the share of answers that passed.

Problems come from the shipped seed banks (``games/data/*.jsonl``: arithmetic, linear
equations, fractions; ``split`` picks the training or held-out problems). Each record carries
a short worked ``solution`` ending with ``[answer]``: the game's reference answer
(`reference_answer`, SPIN's chosen side) and, with ``rationalize``, STaR's hint: when every
answer of a problem failed, the solver gets one more turn that shows the answer and asks for
the working; the index of that turn is listed in the state's ``hinted_turns``, so an objective
can train the hinted answer under the un-hinted prompt.

As a `TaskGame` it is measured greedily, one answer per problem, on the held-out split of its
topics and on the percentages topic it never trains on (``eval/held_out/accuracy``,
``eval/transfer/accuracy``).

Noise injection (seed 004): with ``noise`` above 0, that share of problems (drawn from each
match's seed) is shown with irrelevant but plausible sentences inserted
(selfplay.games.banks.noise); the state keeps the clean problem beside the shown one, and
the ``noisy`` task split measures the held-out problems with noise next to the clean ones
(``eval/noisy/accuracy``), so what the noise taught, or cost, is read on the same problems.
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from selfplay.api.game import Game, GameOptions, GameState, InvalidAction, Player
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.banks import (
    TRAINING_TOPICS,
    TRANSFER_TOPIC,
    WARM_UP_TOPICS,
    Problem,
    load_bank,
)
from selfplay.games.banks.noise import add_noise, noisy_version
from selfplay.games.verified import game_verifier, reply_verdict
from selfplay.plugins.hookspecs import hookimpl

ROLE = "solver"
VOID = ("timeout", "error")
ASK = "Solve: {problem} Answer as [number]."
HINT = "{ask} Hint: the answer is {answer}. Show how to get it, then the answer in brackets."


class MathSolverOptions(GameOptions):
    answers: int = Field(default=4, ge=1, le=64, description="Answers (G) to each problem.")
    topics: list[str] = Field(
        default_factory=lambda: list(TRAINING_TOPICS), description="Bank topics drawn from."
    )
    split: Literal["train", "held_out"] = Field(
        default="train", description="Which problems matches draw: train or held_out."
    )
    source: Literal["bank", "generated"] = Field(
        default="bank",
        description="bank: the shipped problems of the split; generated: fresh problems drawn "
        "like the bank's (never a held-out or transfer one), an endless supply.",
    )
    levels: list[int] = Field(
        default_factory=lambda: [1, 2, 3], description="Difficulty levels drawn (1-3)."
    )
    rationalize: bool = Field(
        default=False, description="A hinted retry when every answer failed (STaR)."
    )
    verifier: str = Field(default="math", description="Registered verifier deciding answers.")
    verifier_options: dict[str, Any] = Field(
        default_factory=dict, description="Options of the verifier, e.g. {timeout: 5}."
    )
    max_turns: int = Field(default=200, ge=1, description="Moves after which the match ends.")
    noise: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of problems shown with irrelevant sentences inserted (seed 004's "
        "noise injection; the clean problem is kept).",
    )
    noise_sentences: int = Field(
        default=1, ge=1, le=5, description="Irrelevant sentences inserted into a noisy problem."
    )
    noise_eval: bool = Field(
        default=False,
        description="Measure the held-out problems with noise too (eval/noisy/accuracy); "
        "always on when noise > 0.",
    )

    @field_validator("levels")
    @classmethod
    def _levels(cls, levels: list[int]) -> list[int]:
        if not levels or not set(levels) <= {1, 2, 3}:
            raise ValueError(f"levels are some of 1, 2, 3; got {levels}.")
        return levels

    @field_validator("topics")
    @classmethod
    def _trainable(cls, topics: list[str]) -> list[str]:
        allowed = (*TRAINING_TOPICS, *WARM_UP_TOPICS)
        unknown = sorted(set(topics) - set(allowed))
        if TRANSFER_TOPIC in topics:
            raise ValueError(f"{TRANSFER_TOPIC} is the transfer check and is never trained on.")
        if unknown or not topics:
            raise ValueError(f"topics are some of {', '.join(allowed)}; got {topics}.")
        return topics


class MathSolverState(GameState):
    problem_id: str
    topic: str
    problem: str
    answer: str
    solution: str = ""
    shown: str | None = None  # the problem as the solver reads it, when noise was inserted
    wanted: int = 1  # answers this match asks for (G; 1 in a task evaluation)
    attempts: tuple[str, ...] = ()  # accepted answers
    verdicts: tuple[str, ...] = ()  # one per turn: pass, fail, timeout, error or invalid
    hinted_turns: tuple[int, ...] = ()  # selfplay.api.tasks.HINTED_TURNS: the hinted turns


def random_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    """Right half of the time: a cold start on it teaches the answer format."""
    return f"[{state.answer}]" if rng.random() < 0.5 else f"[{state.answer}1]"


def solution_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    """The bank's worked solution (a demonstrator that is always right)."""
    return state.solution or f"[{state.answer}]"


class MathSolver(Game):
    name = "math-solver"
    roles = (ROLE,)
    description = (
        "One solver answers a bank maths problem G times; the math verifier decides each "
        "answer (reward: verdict). For GRPO, DPO, SPIN and STaR."
    )
    Options = MathSolverOptions
    State = MathSolverState
    zero_sum = False
    answer_hint = "[answer]"
    players: ClassVar[dict[str, Player]] = {"random": random_player, "solution": solution_player}
    uses_verifier = True
    default_reward = "verdict"
    task_role = ROLE

    def initial(self, seed: int, rng: random.Random) -> MathSolverState:
        options = self.options
        if options.source == "generated" and options.split == "train":
            problem = generated(rng.choice(options.topics), rng, options.levels)
            return self._state(seed, problem, options.answers, noisy=True)
        bank = [
            p
            for topic in options.topics
            for p in load_bank(topic, options.split)
            if p.level in options.levels
        ]
        return self._state(seed, rng.choice(bank), options.answers, noisy=True)

    def _state(
        self, seed: int, problem: Problem, wanted: int, noisy: bool = False
    ) -> MathSolverState:
        """A match on ``problem``; with ``noisy``, noise drawn for the match's seed."""
        opts = self.options
        shown = noisy_version(problem.problem, seed, opts.noise, opts.noise_sentences)
        return MathSolverState(
            seed=seed,
            problem_id=problem.id,
            topic=problem.topic,
            problem=problem.problem,
            answer=problem.answer,
            solution=problem.solution,
            shown=shown if noisy else None,
            wanted=wanted,
        )

    def current_role(self, state: MathSolverState) -> Role | None:
        if len(state.attempts) < state.wanted or self._hint_due(state):
            return ROLE
        return None

    def _hint_due(self, state: MathSolverState) -> bool:
        """One hinted turn, once G answers are in and none of them passed."""
        return (
            self.options.rationalize
            and len(state.attempts) == state.wanted
            and "pass" not in state.verdicts
        )

    def prompt(self, state: MathSolverState, role: Role) -> list[Message]:
        ask = ASK.format(problem=state.shown or state.problem)
        if self._hint_due(state):
            return [Message("user", HINT.format(ask=ask, answer=state.answer))]
        return [Message("user", ask)]

    def parse(self, text: str) -> str:
        """The last ``[...]`` span, else a ``\\boxed{}`` or an "answer is ..." line: the
        verifiers' extraction rule (selfplay.verifiers.answers), without its whole-reply
        case, since a game asks for a stated answer."""
        from selfplay.verifiers.answers import ParseError, extract_answer

        try:
            answer = extract_answer(text, self.answer_pattern, whole_line=False)
        except ParseError:
            raise InvalidAction(
                "no answer found: end with the answer in brackets, e.g. [42]."
            ) from None
        return answer.strip().rstrip(".").strip()

    def legal(self, state: MathSolverState, role: Role, action: str) -> str:
        if not action.strip():
            raise InvalidAction("the answer in brackets is empty; write e.g. [42].")
        return action.strip()

    def apply(self, state: MathSolverState, role: Role, action: str) -> MathSolverState:
        return state.model_copy(update={"attempts": (*state.attempts, action)})

    def judge(
        self, state: MathSolverState, role: Role, text: str
    ) -> tuple[MathSolverState, str | None]:
        """`step`, also recording this turn's verdict and whether it was hinted."""
        index = state.turn + sum(state.invalid.values())  # every earlier turn, valid or not
        hinted = self._hint_due(state)
        moved, action = super().judge(state, role, text)
        reply = self.options.answer_prefix + text
        verdict = "invalid" if action is None else self.verify_reply(reply, action, state.answer)
        update: dict[str, Any] = {"verdicts": (*state.verdicts, verdict)}
        if hinted:
            update["hinted_turns"] = (*state.hinted_turns, index)
        return moved.model_copy(update=update), action

    def verify(self, candidate: str, reference: str) -> str:
        return game_verifier(self).verify(candidate, reference).status

    def verify_reply(self, reply: str, action: str, reference: str) -> str:
        """The verdict on a whole reply: one final answer (see games.verified)."""
        return reply_verdict(self, reply, action, reference).status

    def result(self, state: MathSolverState) -> Payoffs | None:
        """The share of the G answers that passed (a hinted answer does not count)."""
        if self.current_role(state) is not None:
            return None
        hinted = set(state.hinted_turns)
        passed = sum(v == "pass" for i, v in enumerate(state.verdicts) if i not in hinted)
        return {ROLE: passed / state.wanted}

    def legal_actions(self, state: MathSolverState, role: Role) -> list[str]:
        return [f"[{state.answer}]", f"[{state.answer}1]"]

    def signals(self, state: MathSolverState) -> dict[str, float]:
        return {
            **super().signals(state),
            "passed": float(sum(v == "pass" for v in state.verdicts)),
            "hinted": float(len(state.hinted_turns)),
        }

    # ---- the TaskGame and ReferenceAnswers capabilities ------------------------------------

    def task_states(self, split: str, limit: int, seed: int) -> list[MathSolverState]:
        levels, opts = self.options.levels, self.options
        if split == "held_out" or (split == "noisy" and (opts.noise > 0 or opts.noise_eval)):
            problems = [
                p
                for t in self.options.topics
                for p in load_bank(t, "held_out")
                if p.level in levels
            ]
        elif split == "transfer":
            problems = [p for p in load_bank(TRANSFER_TOPIC, "transfer") if p.level in levels]
        else:
            return []
        chosen = list(problems)
        random.Random(f"selfplay-tasks-{seed}").shuffle(chosen)
        states = [self._state(i, p, wanted=1) for i, p in enumerate(chosen[:limit])]
        if split != "noisy":
            return states
        k = opts.noise_sentences
        return [
            s.model_copy(update={"shown": add_noise(s.problem, _task_rng(s.problem_id), k)})
            for s in states
        ]

    def check_answer(self, state: MathSolverState, role: Role, text: str) -> bool:
        """The AnswerCheck capability: would ``text`` pass as an answer here?"""
        action, _ = self.action_of(text, state, role)
        return action is not None and self.verify_reply(text, action, state.answer) == "pass"

    def task_reply(self, state: MathSolverState, role: Role) -> str:
        raise ValueError("math-solver has one role; no other role ever answers.")

    def task_solved(self, state: MathSolverState) -> bool | None:
        first = state.verdicts[0] if state.verdicts else "invalid"
        return None if first in VOID else first == "pass"

    def reference_answer(self, state: MathSolverState, role: Role) -> str | None:
        return state.solution or None


def _task_rng(key: str) -> random.Random:
    """The noise of one evaluation problem: the same every time it is measured."""
    return random.Random(f"selfplay-noise-task-{key}")


def generated(topic: str, rng: random.Random, levels: list[int]) -> Problem:
    """A fresh problem of ``topic``, made as the bank's are, never a held-out or transfer one."""
    from selfplay.games.banks.build import MAKERS, show, solution_of

    unseen = _evaluation_problems()
    while True:
        level = rng.choice(levels)
        text, value, check = MAKERS[topic](rng, level)
        if text not in unseen:
            answer = show(value)
            solution = solution_of(check, answer)
            return Problem(f"{topic}-new", topic, level, text, answer, "train", solution)


@cache
def _evaluation_problems() -> frozenset[str]:
    held = [
        p.problem for t in (*TRAINING_TOPICS, *WARM_UP_TOPICS) for p in load_bank(t, "held_out")
    ]
    return frozenset([*held, *(p.problem for p in load_bank(TRANSFER_TOPIC, "transfer"))])


@hookimpl
def register_games(register):
    register(MathSolver)
