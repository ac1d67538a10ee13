"""Make text a program or a model wrote safe to show: no terminal control codes survive.

A verdict's detail and a program's captured output end up in logs, on the console and in HTML
reports. Raw escape codes there can clear a screen, rewrite earlier lines (hiding a failure),
set a window title or, in some terminals, do worse. Every control character except newline
and tab, every C1 control, DEL and the Unicode bidirectional overrides (which reorder what a
reader sees) is replaced by its visible escape (``\\x1b``, ``\\u202e``), so the evidence stays
readable and nothing acts on the terminal.
"""

from __future__ import annotations

import re

UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control or bidi-override character replaced by its escape."""
    return UNSAFE.sub(_escape, text)
