"""The ``code`` verifier: run a model's program against test code in the sandbox.

``verify(candidate, reference)``: ``candidate`` is the model's text (the last fenced code block
is the program, or the whole text when it has none); ``reference`` is test code, typically
``assert`` statements, run after the program in the same namespace. Pass means the tests ran
to the end without an exception; a crash, a failed assertion or an early exit is a fail; the
wall-clock or CPU limit is a timeout; a sandbox that could not run at all is an error, never a
fail.

Running model-written code is off by default and must be switched on with the option
``allow_code_execution=True``. The sandbox (``code_sandbox``) is NOT A SECURITY BOUNDARY
against a determined attacker; see its docstring for what it does and does not stop.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import Field

from selfplay.api.verifier import Verdict, Verifier, VerifierOptions
from selfplay.plugins.hookspecs import hookimpl
from selfplay.verifiers.code_sandbox import Limits, RunResult, run_sandboxed

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
            max_tasks=o.max_tasks,
            allow_subprocesses=o.allow_subprocesses,
        )

    def check(self, candidate: str, reference: str, **ctx: Any) -> Verdict:
        result = run_sandboxed(extract_code(candidate), reference, self.limits, self.options.python)
        return verdict_of(result)

    def verify_many(self, pairs: Sequence[tuple[str, str]], **ctx: Any) -> list[Verdict]:
        if self.options.parallel == 1:
            return super().verify_many(pairs, **ctx)
        with ThreadPoolExecutor(self.options.parallel) as pool:
            return list(pool.map(lambda pair: self.verify(*pair, **ctx), pairs))


def extract_code(text: str) -> str:
    """The last fenced code block of ``text``, or ``text`` itself when it has none."""
    blocks = FENCE.findall(text)
    return blocks[-1] if blocks else text


def verdict_of(result: RunResult) -> Verdict:
    if result.status == "error":
        return Verdict("error", f"sandbox failure: {result.detail}")
    if result.status == "timeout":
        return Verdict("timeout", result.detail)
    if result.completed:
        return Verdict("pass", "the tests passed")
    lines = result.stderr.strip().splitlines()
    reason = lines[-1] if lines else f"exited with code {result.returncode} before the tests ended"
    return Verdict("fail", reason)


@hookimpl
def register_verifiers(register):
    register("code", CodeVerifier)
