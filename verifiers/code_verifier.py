"""The ``code`` verifier: run a model's program in the sandbox and check what it returns.

``verify(candidate, reference)``: ``candidate`` is the model's text (the last fenced code block
is the program, or the whole text when it has none); ``reference`` is test code made of
``assert`` statements about calls, e.g. ``assert solution(2) == 4`` (the accepted forms are in
``code_tests``). The tests are never run in the sandbox: the parent reads them, sends only the
calls, gets back the plain values the calls returned and compares them itself with expected
values that never enter the sandbox, so a program cannot report its own pass (see the threat
model in ``code_sandbox``). Pass means every test held; a call that raised, a missing report,
an early exit or a wrong value is a fail; the wall-clock or CPU limit is a timeout; a sandbox
that could not run at all, or tests in a form the parent cannot check, is an error, never a
fail.

Running model-written code is off by default and must be switched on with the option
``allow_code_execution=True``. The sandbox is NOT A SECURITY BOUNDARY against a determined
attacker on the machine; see its docstring for what it does and does not stop.

Games that need the values themselves (the code proposer/solver game) call ``evaluate``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from pydantic import Field

from selfplay.api.verifier import Verdict, Verifier, VerifierOptions
from selfplay.plugins.hookspecs import hookimpl
from selfplay.verifiers.code_sandbox import Call, Limits, RunResult, run_calls
from selfplay.verifiers.code_tests import TestFormatError, judge, parse_tests

FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


class CodeExecutionDisabled(RuntimeError):
    """The code verifier was built without ``allow_code_execution=True``."""


class CodeOptions(VerifierOptions):
    allow_code_execution: bool = Field(
        default=False,
        description="Run model-written code (off by default; the sandbox is not a security "
        "boundary against a determined attacker).",
    )
    timeout: float = Field(default=5.0, gt=0, le=600, description="Wall-clock seconds per run.")
    cpu_seconds: int | None = Field(
        default=None, ge=1, description="CPU-time limit (default: the timeout rounded up)."
    )
    memory_mb: int = Field(default=1024, ge=64, description="Address-space limit (MiB).")
    file_size_mb: int = Field(default=16, ge=1, description="Largest file or output (MiB).")
    disk_mb: int = Field(default=64, ge=1, description="All files of one run together (MiB).")
    max_tasks: int = Field(default=64, ge=1, description="Extra threads and processes allowed.")
    allow_subprocesses: bool = Field(
        default=False, description="Let the program start processes (blocked by default)."
    )
    parallel: int = Field(default=1, ge=1, le=64, description="Runs at once in verify_many.")
    python: str | None = Field(
        default=None, description="Interpreter that runs the code (default: this one)."
    )


class CodeVerifier(Verifier):
    """Runs the candidate program and the reference tests in a sandboxed child process."""

    name = "code"
    Options = CodeOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if not self.options.allow_code_execution:
            raise CodeExecutionDisabled(
                "The 'code' verifier runs model-written programs and is off by default. "
                "Set its option allow_code_execution=True to switch it on (the sandbox is not "
                "a security boundary against a determined attacker)."
            )
        o = self.options
        self.limits = Limits(
            wall_seconds=o.timeout,
            cpu_seconds=o.cpu_seconds or math.ceil(o.timeout),
            memory_mb=o.memory_mb,
            file_size_mb=o.file_size_mb,
            disk_mb=o.disk_mb,
            max_tasks=o.max_tasks,
            allow_subprocesses=o.allow_subprocesses,
        )

    def check(self, candidate: str, reference: str, **ctx: Any) -> Verdict:
        try:
            cases = parse_tests(reference)
        except TestFormatError as err:
            return Verdict("error", f"the reference tests cannot be checked: {err}")
        result = self.evaluate(extract_code(candidate), [case.call for case in cases])
        return judge(cases, result)

    def evaluate(
        self,
        program: str,
        calls: Sequence[Call],
        clock: float | None = None,
        hash_seed: int | None = None,
    ) -> RunResult:
        """Run ``program`` and then ``calls`` in the sandbox; the plain values come back.
        ``clock``: the moment (seconds since 1970) the run's clocks start at, instead of now;
        ``hash_seed``: the run's PYTHONHASHSEED, instead of a random one."""
        limits = replace(self.limits, fake_clock=clock, hash_seed=hash_seed)
        return run_calls(program, calls, limits, self.options.python)

    def verify_many(self, pairs: Sequence[tuple[str, str]], **ctx: Any) -> list[Verdict]:
        if self.options.parallel == 1:
            return super().verify_many(pairs, **ctx)
        with ThreadPoolExecutor(self.options.parallel) as pool:
            return list(pool.map(lambda pair: self.verify(*pair, **ctx), pairs))


def extract_code(text: str) -> str:
    """The last fenced code block of ``text``, or ``text`` itself when it has none."""
    blocks = FENCE.findall(text)
    return blocks[-1] if blocks else text


@hookimpl
def register_verifiers(register):
    register("code", CodeVerifier)
