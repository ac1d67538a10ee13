"""Code proposer/solver (Absolute Zero, Zhao et al. 2025): one model sets and solves code tasks.

    propose  the proposer writes a short deterministic Python function ``f`` and input(s) for a
             task of the match's kind; the sandbox runs it ``CHECK_RUNS`` times, with clocks
             set years apart and hash seeds, all drawn from the match's seed
             (`check_runs`): it must run, give plain values the solver can write as
             literals, and give equal values every time (so not depend on the time or on
             the order of a set of strings)
    solve    ``attempts`` solvers (roles ``solver_1`` ... ``solver_G``, each seeing the same
             prompt and nothing of the others) answer in turn:
             deduction  given f and the input, predict the output    (checked by equality)
             abduction  given f and the output, find an input        (checked by running f)
             induction  given the message and the first half of the input/output pairs,
                        write f                                      (checked by running it
                                                                      on every pair, the
                                                                      hidden half included)

Payoffs (AZR's rewards). Each solver gets its correctness: 1 when its answer passes, else 0.
The proposer gets the learnability of its task, ``1 - p`` for the solvers' pass rate ``p``,
and 0 when ``p`` is 0 or 1: a task everyone or no one solves teaches nothing. An invalid
proposal (it fails the sandbox check) pays ``invalid_proposal_payoff`` and the solvers 0, as
they never played. A sandbox error (the checker's fault, never a program's) voids the match:
0 to everyone. A forfeit (an unreadable answer once the retries are spent) pays the offender
``rules.penalty`` and everyone else 0: nobody earned a bonus from a format error, and a
solver's forfeit ends the match before the task's learnability is known. The game is not
zero-sum. With one policy in every seat and a GRPO estimator the solver attempts share a
prompt, so they form one group.

Every check is a verdict computed by this trusted process from plain values the sandbox
returns (``selfplay.verifiers.code_sandbox``); expected outputs never enter it. Running code
is off unless ``allow_code_execution=true``; without it the game refuses to start and says
how to switch it on. The ``held_out`` split of the seed bank is the `TaskGame` evaluation.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from selfplay.api.errors import ConfigError
from selfplay.api.game import Game, GameOptions, GameState, Player
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.proposers import code_prompts as prompts
from selfplay.games.proposers.code_check import CHECK_RUNS, check_runs, same_values, validity
from selfplay.games.proposers.code_tasks import (
    KINDS,
    BankTask,
    Kind,
    check_program,
    format_proposal,
    last_block,
    load_tasks,
    parse_proposal,
    read_arguments,
    read_value,
    show_arguments,
)
from selfplay.plugins.hookspecs import hookimpl
from selfplay.verifiers import code_values
from selfplay.verifiers.code_sandbox import Call, RunResult

ATTEMPTS = 4
CACHED_RUNS = 512
OFF = (
    "code-proposer-solver runs model-written Python and is off by default. Switch it on with "
    "--set game_options.allow_code_execution=true (programs run in the code verifier's "
    "sandbox, which is not a security boundary against a determined attacker)."
)
Phase = Literal["propose", "solve", "done"]


def solver_roles(attempts: int) -> tuple[Role, ...]:
    return tuple(f"solver_{k}" for k in range(1, attempts + 1))


class CodeProposerSolverOptions(GameOptions):
    allow_code_execution: bool = Field(
        default=False, description="Run model-written programs in the sandbox (off by default)."
    )
    kinds: tuple[Kind, ...] = Field(
        default=KINDS, min_length=1, description="Task kinds a match draws from."
    )
    attempts: int = Field(
        default=ATTEMPTS, ge=2, le=16, description="Solver attempts per task (G of AZR)."
    )
    induction_inputs: int = Field(
        default=4, ge=2, le=8, description="Inputs an induction task gives (half are hidden)."
    )
    invalid_proposal_payoff: float = Field(
        default=-1.0, le=0, description="Proposer's payoff for a task that fails the check."
    )
    timeout: float = Field(default=2.0, gt=0, le=60, description="Seconds per sandbox run.")
    memory_mb: int = Field(default=512, ge=64, description="Sandbox memory limit (MiB).")

    @model_validator(mode="after")
    def _room(self) -> CodeProposerSolverOptions:
        if self.max_turns < self.attempts + 1:
            raise ValueError(
                f"max_turns={self.max_turns} is too few for attempts={self.attempts}; a match "
                f"takes {self.attempts + 1} moves: raise max_turns or lower attempts."
            )
        return self


class CodeTaskState(GameState):
    kind: Kind
    attempts: int  # solver attempts in this match (1 in an evaluation task)
    example: str  # a bank task in proposal form, shown to the proposer
    phase: Phase = "propose"
    program: str | None = None
    inputs: tuple[str, ...] = ()  # argument lists of f, as literals
    outputs: tuple[str, ...] = ()  # what f returned for each, in code_values' tagged form
    message: str = ""
    rejected: str | None = None  # why the proposal failed the sandbox check
    answers: tuple[str, ...] = ()
    verdicts: tuple[str, ...] = ()  # pass / fail / timeout per attempt
    void: str | None = None
    task_id: str | None = None


def random_player(game: Game, state: CodeTaskState, role: Role, rng: random.Random) -> str:
    """Proposes the example (a broken program 1 time in 5); solves right half the time."""
    answers = game.legal_actions(state, role)
    if state.phase == "propose":
        return answers[0] if rng.random() < 0.8 else answers[-1]
    return answers[0] if rng.random() < 0.5 else answers[-1]


class CodeProposerSolver(Game):
    name = "code-proposer-solver"
    description = (
        "Absolute Zero style: the proposer writes a Python function and inputs (deduction, "
        "abduction or induction), the sandbox checks it; solvers answer; learnability reward."
    )
    roles: ClassVar[tuple[Role, ...]] = ("proposer", *solver_roles(ATTEMPTS))
    Options = CodeProposerSolverOptions
    State = CodeTaskState
    zero_sum = False
    answer_hint = "```python ...```, ```input ...```, ```output ...``` or ```message ...``` blocks"
    players: ClassVar[dict[str, Player]] = {"random": random_player}
    uses_verifier = True
    task_role = "solver_1"

    def __init__(self, options: Any = None, rules: Any = None, **context: Any) -> None:
        super().__init__(options, rules, **context)
        if not self.options.allow_code_execution:
            raise ConfigError(OFF)
        self.roles = ("proposer", *solver_roles(self.options.attempts))
        self._runs: OrderedDict[tuple, RunResult] = OrderedDict()

    # ---- the rules ---------------------------------------------------------------------------

    def initial(self, seed: int, rng: random.Random) -> CodeTaskState:
        kind = rng.choice(self.options.kinds)
        example = rng.choice(load_tasks("train"))
        return CodeTaskState(
            seed=seed,
            kind=kind,
            attempts=self.options.attempts,
            example=self._example(example, kind),
        )

    def current_role(self, state: CodeTaskState) -> Role | None:
        if state.phase == "propose":
            return "proposer"
        if state.phase == "solve":
            return f"solver_{len(state.answers) + 1}"
        return None

    def prompt(self, state: CodeTaskState, role: Role) -> list[Message]:
        if state.phase == "propose":
            return prompts.proposer(state, self.options)
        return prompts.solver(state)

    def parse(self, text: str) -> str:
        return text  # the answer is in fenced blocks, read by ``legal``

    def legal(self, state: CodeTaskState, role: Role, action: str) -> str:
        if state.phase == "propose":
            proposal = parse_proposal(action, state.kind, self.options.induction_inputs)
            inputs = tuple(show_arguments(args) for args in proposal.inputs)
            return format_proposal(proposal.program, inputs, proposal.message)
        if state.kind == "deduction":
            return repr(read_value(last_block(action, ("output", ""), "the value")))
        if state.kind == "abduction":
            return show_arguments(read_arguments(last_block(action, ("input", ""), "the input")))
        program = last_block(action, ("python", "py", "python3", ""), "the function f")
        return check_program(program, strict=False)

    def apply(self, state: CodeTaskState, role: Role, action: str) -> CodeTaskState:
        if state.phase == "propose":
            return self._proposed(state, action)
        verdict = self._judge(state, action)
        answers, verdicts = (*state.answers, action), (*state.verdicts, verdict)
        update: dict[str, Any] = {"answers": answers, "verdicts": verdicts}
        if verdict == "error":
            update.update(phase="done", void="the sandbox failed while checking an answer")
        elif len(answers) >= state.attempts:
            update["phase"] = "done"
        return state.model_copy(update=update)

    def outcome(self, state: GameState) -> Payoffs | None:
        if state.forfeit is not None:
            return {r: self.rules.penalty if r == state.forfeit else 0.0 for r in self.roles}
        return super().outcome(state)

    def result(self, state: CodeTaskState) -> Payoffs | None:
        if state.phase != "done":
            return None
        solvers = solver_roles(self.options.attempts)
        if state.void is not None:
            return dict.fromkeys(self.roles, 0.0)
        if state.rejected is not None:
            return {"proposer": self.options.invalid_proposal_payoff, **dict.fromkeys(solvers, 0.0)}
        scores = [1.0 if verdict == "pass" else 0.0 for verdict in state.verdicts]
        payoffs = {role: scores[i] if i < len(scores) else 0.0 for i, role in enumerate(solvers)}
        return {"proposer": learnability(scores), **payoffs}

    def signals(self, state: CodeTaskState) -> dict[str, float]:
        passes = sum(verdict == "pass" for verdict in state.verdicts)
        return {
            **super().signals(state),
            "valid_proposal": float(state.program is not None and state.rejected is None),
            "pass_rate": passes / len(state.verdicts) if state.verdicts else 0.0,
            "void": float(state.void is not None),
        }

    def legal_actions(self, state: CodeTaskState, role: Role) -> list[str]:
        if state.phase == "propose":
            broken = "```python\ndef f(x):\n    return 1 // 0\n```\n" + _inputs(state, self)
            return [state.example, broken]
        right, wrong = prompts.right_and_wrong(state)
        return [right, wrong]

    # ---- checking, in the trusted process ----------------------------------------------------

    def _proposed(self, state: CodeTaskState, action: str) -> CodeTaskState:
        proposal = parse_proposal(action, state.kind, self.options.induction_inputs)
        calls = [Call("f", args) for args in proposal.inputs]
        runs = [self._run(proposal.program, calls, state.seed, 1)]
        for copy in range(2, CHECK_RUNS + 1):  # stop at the first run that differs
            if runs[-1].status != "ok" or not same_values(runs[-1], runs[0]):
                break
            runs.append(self._run(proposal.program, calls, state.seed, copy))
        update: dict[str, Any] = {
            "program": proposal.program,
            "inputs": tuple(show_arguments(args) for args in proposal.inputs),
            "message": proposal.message,
        }
        if any(run.status == "error" for run in runs):
            return state.model_copy(update={**update, "phase": "done", "void": "sandbox error"})
        problem, outputs = validity(runs, self.options.timeout)
        if problem is not None:
            return state.model_copy(update={**update, "phase": "done", "rejected": problem})
        return state.model_copy(update={**update, "phase": "solve", "outputs": outputs})

    def _judge(self, state: CodeTaskState, action: str) -> str:
        """pass / fail / timeout / error for one solver answer; ``action`` is normalised."""
        expected = [code_values.loads(text) for text in state.outputs]
        if state.kind == "deduction":
            return "pass" if read_value(action) == expected[0] else "fail"
        if state.kind == "abduction":
            program, args = state.program or "", [read_arguments(action)]
        else:
            program, args = action, [read_arguments(text) for text in state.inputs]
        result = self._run(program, [Call("f", a) for a in args], state.seed, 1)
        if result.status != "ok":
            return result.status
        got = result.outcomes
        right = all(o.kind == "ok" and o.value == e for o, e in zip(got, expected, strict=False))
        return "pass" if right and len(got) == len(args) else "fail"

    def _run(self, program: str, calls: list[Call], match_seed: int, copy: int) -> RunResult:
        """The check's run ``copy`` (from 1) in a match; remembered by its program, calls,
        clock and hash seed, so a replay agrees."""
        clock, hash_seed = check_runs(match_seed)[copy - 1]
        key = (program, tuple(repr(c) for c in calls), clock, hash_seed)
        if key in self._runs:
            self._runs.move_to_end(key)
            return self._runs[key]
        result = self.runner().evaluate(program, calls, clock, hash_seed)
        self._runs[key] = result
        if len(self._runs) > CACHED_RUNS:
            self._runs.popitem(last=False)
        return result

    def runner(self) -> Any:
        """The run's ``code`` verifier (made once); from the registry without a factory."""
        made = getattr(self, "_runner", None)
        if made is None:
            options = {
                "allow_code_execution": True,
                "timeout": self.options.timeout,
                "memory_mb": self.options.memory_mb,
            }
            if self.verifiers is not None:
                made = self.verifiers("code", options)
            else:
                from selfplay.plugins.manager import registries

                made = registries().verifiers.get("code")(**options)
            self._runner = made
        return made

    # ---- held-out evaluation (the TaskGame capability) ---------------------------------------

    def task_states(self, split: str, limit: int, seed: int) -> list[CodeTaskState]:
        """Bank tasks of ``split`` set up for one solver attempt, every kind of each task."""
        if split != "held_out":
            return []
        states = [
            self._task_start(task, kind, index)
            for index, (task, kind) in enumerate(
                (task, kind) for task in load_tasks("held_out") for kind in self.options.kinds
            )
        ]
        random.Random(f"selfplay-code-tasks-{seed}").shuffle(states)
        return states[:limit]

    def _task_start(self, task: BankTask, kind: Kind, index: int) -> CodeTaskState:
        count = 1 if kind != "induction" else min(self.options.induction_inputs, len(task.inputs))
        outputs = tuple(code_values.dumps(read_value(text)) for text in task.outputs[:count])
        return CodeTaskState(
            seed=index,
            kind=kind,
            attempts=1,
            example=self._example(task, kind),
            phase="solve",
            program=task.program,
            inputs=task.inputs[:count],
            outputs=outputs,
            message=task.message,
            task_id=task.id,
        )

    def task_reply(self, state: CodeTaskState, role: Role) -> str:
        return ""  # only the solver acts in a task

    def task_solved(self, state: CodeTaskState) -> bool | None:
        return None if state.void is not None else state.verdicts[:1] == ("pass",)

    def _example(self, task: BankTask, kind: Kind) -> str:
        if kind != "induction":
            return format_proposal(task.program, task.inputs[:1])
        count = self.options.induction_inputs
        return format_proposal(task.program, task.inputs[:count], task.message)


def learnability(scores: list[float]) -> float:
    """AZR's proposer reward: 1 - pass rate, and 0 when the pass rate is 0 or 1."""
    if not scores:
        return 0.0
    rate = sum(scores) / len(scores)
    return 0.0 if rate in (0.0, 1.0) else 1.0 - rate


def _inputs(state: CodeTaskState, game: CodeProposerSolver) -> str:
    count = game.options.induction_inputs if state.kind == "induction" else 1
    blocks = [f"```input\n{k}\n```" for k in range(count)]
    message = "\n```message\nbroken\n```" if state.kind == "induction" else ""
    return "\n".join(blocks) + message


@hookimpl
def register_games(register):
    register(CodeProposerSolver)
