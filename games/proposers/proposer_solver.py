"""The shared rules of the maths proposer/solver games, decided by a verifier.

    propose  the proposer writes a problem with its answer: [problem: ... answer: ...]
    compute  (compute_answers) a problem the game can work out itself (plain arithmetic, one
             linear equation: games/proposers/computed.py) must come with its right answer;
             a wrong one makes the problem invalid, however sure the proposer is of it
    check    (validity_check) the proposer solves its own problem again, without seeing
             its answer (Absolute Zero's validity check); a problem it cannot solve is invalid
    solve    the solver answers [42], or asks a clarifying question [ask: ...] (at most
             max_questions), which the proposer answers [reply: ...] or [decline]s

Noise injection (seed 004): with ``noise`` above 0, that share of matches (drawn from each
match's seed) shows the solver the problem with an irrelevant sentence inserted
(selfplay.games.banks.noise); the state keeps the clean problem (``problem``) beside it
(``noisy_problem``), the proposer's own check and replies read the clean one, and the
``noisy`` split of the task evaluation measures the solver on the held-out problems with
noise, next to the clean ``held_out`` split.

Payoffs: solved → solver +1, proposer −1; not solved → the reverse. An invalid problem (a
wrong answer to a problem the game worked out, an ill-posed or, under ``always``, unreadable
one, or the proposer failing its own check) ends the match at once: the proposer gets
``invalid_problem_payoff`` (−1) and the solver 0, as the solver never played; the game is
therefore not zero-sum. With ``solver_reference: game`` the solver is scored against the
game's value wherever the game works a problem out (no validity check there), so a wrong
answer to such a problem still costs the proposer −1, but the solver plays it for ±1.
A verifier ``timeout`` or ``error`` voids the match: 0 to everyone,
neither a win nor a loss, marked ``void`` in the signals and ``state.void`` (episodes keep a
payoff for every role, so a void match is a draw with its reason recorded rather than a
missing payoff). An answer's verdict is on the whole reply (``games.verified.reply_verdict``):
a reply that also states a different answer (a box, an "answer:" line) fails; a question
``[ask: ...]`` is never an answer. An unreadable answer in a proposal is an invalid move, not
a void, so a proposer cannot escape a loss by writing garbage.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from selfplay.api.game import Game, GameOptions, GameState, InvalidAction, Player
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.banks import TOPICS, TRANSFER_TOPIC, Problem, load_bank
from selfplay.games.banks.noise import noisy_version, task_noise
from selfplay.games.proposers.computed import (
    VOID,
    after_proposal,
    match_payoffs,
    not_new,
    reference,
    valid,
    work_out,
)
from selfplay.games.proposers.math_players import random_player, solution_player
from selfplay.games.proposers.math_tasks import (
    PROPOSAL_FORMAT,
    SPAN,
    after_prefix,
    format_proposal,
    held_out_bank,
    parse_proposal,
    pick,
    wrong_answer,
)
from selfplay.games.verified import game_verifier, reply_verdict

ROLES = ("proposer", "solver")
REPLY: ContextVar[str | None] = ContextVar("proposer_solver_reply", default=None)
Phase = Literal["propose", "check", "solve", "reply", "judge", "done"]
DECLINE = ("decline", "pass", "no comment")
ASK = re.compile(r"\s*ask\s*:", re.IGNORECASE)
CHECK_RULES = (
    "Solve the problem below. Think briefly, then give only your final answer in square "
    "brackets, e.g. [42] or [-3/4]."
)


class ProposerSolverOptions(GameOptions):
    max_questions: int = Field(
        default=2, ge=0, le=8, description="Clarifying questions the solver may ask."
    )
    validity_check: bool = Field(
        default=True, description="The proposer must solve its own problem for it to count."
    )
    compute_answers: Literal["off", "when-readable", "always"] = Field(
        default="when-readable",
        description="when-readable: a problem the game can work out (plain arithmetic, one "
        "linear equation) counts only with its right answer; always: one it cannot work out "
        "is invalid too (for topics made only of such problems: sums, fractions, "
        "linear-equations); off: the validity check alone.",
    )
    solver_reference: Literal["proposer", "game"] = Field(
        default="proposer",
        description="What the solver is scored against: the proposer's answer, or the game's "
        "value where it works the problem out (which then reaches the solver, unchecked, even "
        "when the proposer's answer is wrong: -1 to the proposer).",
    )
    new_problems: bool = Field(
        default=False,
        description="A problem that repeats the example shown, or one of the game's held-out "
        "problems, is invalid, as the rules ask for a new one (the solution player then "
        "varies the example's numbers).",
    )
    invalid_problem_payoff: float = Field(
        default=-1.0, le=0, description="Proposer's payoff for a problem it cannot solve."
    )
    verifier: str = Field(default="math", description="Registered verifier deciding answers.")
    verifier_options: dict[str, Any] = Field(
        default_factory=dict, description="Options of the verifier, e.g. {timeout: 5}."
    )
    noise: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Share of matches whose problem the solver sees with irrelevant sentences "
        "inserted (seed 004's noise injection; the clean problem is kept).",
    )
    noise_sentences: int = Field(
        default=1, ge=1, le=5, description="Irrelevant sentences inserted into a noisy problem."
    )
    noise_eval: bool = Field(
        default=False,
        description="Measure the held-out problems with noise too (eval/noisy/accuracy); "
        "always on when noise > 0.",
    )

    @model_validator(mode="after")
    def _room(self) -> ProposerSolverOptions:
        needed = 3 + 2 * self.max_questions + self.judge_moves()
        if self.max_turns < needed:
            raise ValueError(
                f"max_turns={self.max_turns} is too few for max_questions={self.max_questions}; "
                f"a full match takes {needed} moves: raise max_turns or lower max_questions."
            )
        if self.solver_reference == "game" and self.compute_answers == "off":
            raise ValueError(
                "solver_reference=game scores the solver against the value the game works "
                "out, which compute_answers=off turns off: set compute_answers to "
                "when-readable or always, or solver_reference to proposer."
            )
        return self

    def judge_moves(self) -> int:
        """Moves a judge seat adds to a full match (proposer-solver-judge: 1)."""
        return 0


class ProposerSolverState(GameState):
    topic: str
    level: int
    seed_problem: str  # a bank problem: the example (or the seed to vary) shown to the proposer
    seed_answer: str
    phase: Phase = "propose"
    problem: str | None = None
    noisy_problem: str | None = None  # what the solver reads, when noise was injected
    answer: str | None = None
    computed: str | None = None  # the problem's value, when the game could work it out
    stated: str | None = None  # the proposer's answer against it: pass, fail, ill-posed, ...
    self_answer: str | None = None
    self_verdict: str | None = None
    questions: tuple[tuple[str, str | None], ...] = ()  # (question, reply; None = declined)
    final: str | None = None
    verdict: str | None = None
    void: str | None = None  # why the verifier could not decide


class ProposerSolverGame(Game):
    """Base of the maths proposer games; subclasses write the proposer's task and pick seeds."""

    roles = ROLES
    Options = ProposerSolverOptions
    State = ProposerSolverState
    zero_sum = False  # an invalid problem pays the proposer −1 and the solver 0
    answer_pattern = SPAN
    answer_hint = f"{PROPOSAL_FORMAT}, [answer], [ask: question] or [reply: text]"
    players: ClassVar[dict[str, Player]] = {"random": random_player, "solution": solution_player}
    train_topics: ClassVar[tuple[str, ...]] = tuple(t for t in TOPICS if t != TRANSFER_TOPIC)
    uses_verifier = True
    task_role = "solver"  # the TaskGame capability: held-out accuracy of the solver

    # ---- what subclasses write ------------------------------------------------------------

    def propose_prompt(self, state: ProposerSolverState) -> list[Message]:
        raise NotImplementedError

    def solver_rules(self, state: ProposerSolverState) -> str:
        left = self.options.max_questions - len(state.questions)
        ask = (
            f" If something is unclear you may instead ask the proposer one question as "
            f"[ask: your question] ({left} left)."
            if left > 0
            else ""
        )
        return (
            "You are the solver. Solve the problem step by step, then end with your final "
            f"answer in square brackets, e.g. [42] or [-3/4].{ask}"
        )

    # ---- the rules ---------------------------------------------------------------------------

    def current_role(self, state: ProposerSolverState) -> Role | None:
        return {"propose": "proposer", "check": "proposer", "reply": "proposer"}.get(
            state.phase, "solver" if state.phase == "solve" else None
        )

    def prompt(self, state: ProposerSolverState, role: Role) -> list[Message]:
        if state.phase == "propose":
            return self.propose_prompt(state)
        if state.phase == "check":
            return [Message("system", CHECK_RULES), Message("user", f"Problem: {state.problem}")]
        if state.phase == "reply":
            question = state.questions[-1][0]
            rules = (
                f"You proposed the problem below (your answer: {state.answer}). The solver asks "
                "a question. Answer it as [reply: your answer to the question], or [decline]. "
                "You win if the solver gets the problem wrong."
            )
            user = f"Problem: {state.problem}\nQuestion: {question}"
            return [Message("system", rules), Message("user", user)]
        return [Message("system", self.solver_rules(state)), Message("user", self._task(state))]

    def _task(self, state: ProposerSolverState) -> str:
        lines = [f"Problem: {state.noisy_problem or state.problem}"]
        for question, reply in state.questions:
            lines.append(f"You asked: {question}\nProposer: {reply or '(declined to answer)'}")
        return "\n".join(lines)

    def legal(self, state: ProposerSolverState, role: Role, action: str) -> str:
        text = " ".join(action.split())
        if state.phase == "propose":
            problem, answer = parse_proposal(text)
            return f"problem: {problem} answer: {answer}"
        if state.phase == "reply":
            reply = after_prefix(text, "reply")
            return "decline" if reply.lower().strip(" .!") in (*DECLINE, "") else f"reply: {reply}"
        if state.phase == "solve" and ASK.match(text):
            question = after_prefix(text, "ask")
            if len(state.questions) >= self.options.max_questions:
                raise InvalidAction("you have no questions left; give your answer, e.g. [42].")
            if not question:
                raise InvalidAction("write a question after 'ask:', e.g. [ask: is x whole?].")
            return f"ask: {question}"
        return text

    def apply(self, state: ProposerSolverState, role: Role, action: str) -> ProposerSolverState:
        if state.phase == "propose":
            problem, answer = parse_proposal(action)
            opts = self.options
            verify, old = game_verifier(self).verify, self.old(state)
            computed, stated = work_out(problem, answer, opts.compute_answers, verify, old)
            phase = after_proposal(computed, stated, opts)
            noisy = noisy_version(problem, state.seed, opts.noise, opts.noise_sentences)
            update = {
                "problem": problem,
                "answer": answer,
                "computed": computed,
                "stated": stated,
                "phase": phase,
                "noisy_problem": noisy,
                "void": stated and _void(stated, "answer check"),
            }
            return state.model_copy(update=update)
        if state.phase == "check":
            verdict = self.verify(action, state.answer)
            phase = "solve" if verdict == "pass" else "done"
            update = {"self_answer": action, "self_verdict": verdict, "phase": phase}
            return state.model_copy(update={**update, "void": _void(verdict, "check")})
        if state.phase == "reply":
            reply = None if action == "decline" else action.removeprefix("reply: ")
            questions = (*state.questions[:-1], (state.questions[-1][0], reply))
            return state.model_copy(update={"questions": questions, "phase": "solve"})
        if action.startswith("ask: "):
            questions = (*state.questions, (action.removeprefix("ask: "), None))
            return state.model_copy(update={"questions": questions, "phase": "reply"})
        verdict = self.verify(action, reference(state, self.options))
        update = {"final": action, "verdict": verdict, "phase": "done"}
        return state.model_copy(update={**update, "void": _void(verdict, "answer")})

    def judge(
        self, state: ProposerSolverState, role: Role, text: str
    ) -> tuple[ProposerSolverState, str | None]:
        """`Game.judge`, with the whole reply at hand for the verdict on an answer."""
        token = REPLY.set(self.options.answer_prefix + text)
        try:
            return super().judge(state, role, text)
        finally:
            REPLY.reset(token)

    def verify(self, candidate: str, reference: str | None) -> str:
        """``pass``/``fail``/``timeout``/``error`` from the configured verifier; on the whole
        reply when one is being judged (the one-final-answer rule)."""
        reply = REPLY.get()
        if reply is None:
            return game_verifier(self).verify(candidate, reference or "").status
        return reply_verdict(self, reply, candidate, reference or "").status

    def result(self, state: ProposerSolverState) -> Payoffs | None:
        if state.phase != "done":
            return None
        if state.void is not None:
            return dict.fromkeys(ROLES, 0.0)
        return match_payoffs(state, state.verdict == "pass", self.options.invalid_problem_payoff)

    def legal_actions(self, state: ProposerSolverState, role: Role) -> list[str]:
        if state.phase == "propose":
            right = format_proposal(state.seed_problem, state.seed_answer)
            return [right, format_proposal(state.seed_problem, wrong_answer(state.seed_answer))]
        if state.phase == "reply":
            return ["[decline]", "[reply: the answer is a whole number]"]
        right = reference(state, self.options) or "0"
        answers = [f"[{right}]", f"[{wrong_answer(right)}]"]
        if state.phase == "solve" and len(state.questions) < self.options.max_questions:
            answers.append("[ask: is the answer a whole number?]")
        return answers

    def signals(self, state: ProposerSolverState) -> dict[str, float]:
        return {
            **super().signals(state),
            "questions": float(len(state.questions)),
            "replies": float(sum(reply is not None for _, reply in state.questions)),
            "valid_problem": float(valid(state) and state.problem is not None),
            "solved": float(state.verdict == "pass"),
            "void": float(state.void is not None),
        }

    def old(self, state: ProposerSolverState) -> dict[str, str]:
        """The problems that are not new (``new_problems``), bare, each with its verdict."""
        if not self.options.new_problems:
            return {}
        held_out = held_out_bank(getattr(self.options, "topics", self.train_topics))
        return not_new(state.seed_problem, tuple(p.problem for p in held_out))

    # ---- held-out evaluation -----------------------------------------------------------------

    def task_states(self, split: str, limit: int, seed: int) -> list[ProposerSolverState]:
        """Bank problems of ``split`` set up for the solver (the proposer's part skipped);
        ``noisy`` is the ``held_out`` problems with noise, when the game injects any."""
        opts = self.options
        if split == "transfer":
            problems = load_bank(TRANSFER_TOPIC, "transfer")
        elif split == "held_out" or (split == "noisy" and (opts.noise > 0 or opts.noise_eval)):
            problems = held_out_bank(getattr(opts, "topics", self.train_topics))
        else:
            return []
        states = [self._solver_start(p, i) for i, p in enumerate(pick(problems, limit, seed))]
        if split != "noisy":
            return states
        noise = opts.noise_sentences
        return [
            s.model_copy(update={"noisy_problem": task_noise(s.problem, s.seed, noise)})
            for s in states
        ]

    def _solver_start(self, problem: Problem, index: int) -> ProposerSolverState:
        return self.State(
            seed=index,
            topic=problem.topic,
            level=problem.level,
            seed_problem=problem.problem,
            seed_answer=problem.answer,
            phase="solve",
            problem=problem.problem,
            answer=problem.answer,
        )

    def task_reply(self, state: ProposerSolverState, role: Role) -> str:
        """In a task the proposer declines every clarifying question."""
        return "[decline]"

    def task_solved(self, state: ProposerSolverState) -> bool | None:
        """Void tasks (verifier timeout or error) are None: counted, left out of accuracy."""
        return None if state.void is not None else state.verdict == "pass"


def _void(verdict: str, step: str) -> str | None:
    return f"verifier {verdict} at the {step}" if verdict in VOID else None
