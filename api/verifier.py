"""The verifier contract: ``verify(candidate, reference, **ctx) -> Verdict``.

A verdict is typed: ``pass`` and ``fail`` judge the candidate; ``timeout`` says the check ran
out of time; ``error`` says the checker itself broke (a worker died, a process could not be
started, the reference is malformed). An error is never the candidate's fault, so a reward must
never turn it into a silent 0: ``Verdict.score`` is ``None`` for it.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

Status = Literal["pass", "fail", "timeout", "error"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "timeout", "error")
MAX_DETAIL_CHARS = 300


@dataclass(frozen=True, slots=True)
class Verdict:
    """The result of one check; ``detail`` is a short reason a person can read."""

    status: Status
    detail: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Verdict status {self.status!r} is not one of {STATUSES}.")
        if len(self.detail) > MAX_DETAIL_CHARS:
            object.__setattr__(self, "detail", self.detail[: MAX_DETAIL_CHARS - 3] + "...")

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def score(self) -> float | None:
        """1.0 for pass, 0.0 for fail or timeout, None for error (not applicable, never 0)."""
        if self.status == "error":
            return None
        return 1.0 if self.status == "pass" else 0.0


class VerifierOptions(BaseModel):
    """Options every verifier accepts; verifiers subclass this and add their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Verifier(ABC):
    """Checks a candidate answer against a reference.

    Subclasses set ``name`` and ``Options`` and implement ``check``; options arrive as keyword
    arguments and are validated by ``Options`` (an unknown key is an error naming it).
    """

    name: ClassVar[str]
    Options: ClassVar[type[VerifierOptions]] = VerifierOptions

    def __init__(self, **options: Any) -> None:
        self.options = self.Options(**options)

    def verify(self, candidate: str, reference: str, **ctx: Any) -> Verdict:
        """The verdict; an exception inside the checker becomes an ``error`` verdict."""
        try:
            return self.check(candidate, reference, **ctx)
        except Exception as err:
            return Verdict("error", f"{self.name} verifier failed: {type(err).__name__}: {err}")

    @abstractmethod
    def check(self, candidate: str, reference: str, **ctx: Any) -> Verdict:
        """Judge one candidate; may raise, ``verify`` reports the exception as an error."""

    def verify_many(self, pairs: Sequence[tuple[str, str]], **ctx: Any) -> list[Verdict]:
        """Verdicts for many (candidate, reference) pairs; override to batch or parallelise."""
        return [self.verify(candidate, reference, **ctx) for candidate, reference in pairs]

    def close(self) -> None:
        """Release worker processes; a verifier is usable again after ``close``."""


# ---- text safe to show -------------------------------------------------------------------
# Make text a program or a model wrote safe to show: no terminal control codes survive.
#
# A verdict's detail and a program's captured output end up in logs, on the console and in HTML
# reports. Raw escape codes there can clear a screen, rewrite earlier lines (hiding a failure),
# set a window title or, in some terminals, do worse. Every control character except newline
# and tab, every C1 control, DEL and the Unicode bidirectional overrides (which reorder what a
# reader sees) is replaced by its visible escape (``\\x1b``, ``\\u202e``), so the evidence stays
# readable and nothing acts on the terminal.

UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control or bidi-override character replaced by its escape."""
    return UNSAFE.sub(_escape, text)
