"""How a game reads a move's name written in an answer: one rule for every game and phrasing.

Surrounding space is dropped and ASCII letters match in either case; nothing else is folded.
A character outside ASCII is refused with its Unicode name, whatever it looks like: Unicode's
own case rules fold a few look-alikes onto ASCII letters (the Kelvin sign ``K`` lower-cases to
``k``) and leave the rest (Cyrillic ``к``, Greek ``κ``, full-width ``ｋ``), so folding some would
make a square's label depend on which script a look-alike happens to come from. Every move
name a game offers is ASCII (an OpenSpiel action text that is not is replaced by its number).
"""

from __future__ import annotations

import unicodedata

from selfplay.api.game import InvalidAction


def read_name(written: str) -> str:
    """``written`` as a move's name: stripped and lower-cased; InvalidAction when a character
    is outside ASCII."""
    name = written.strip()
    odd = next((c for c in name if not c.isascii()), None)
    if odd is not None:
        what = unicodedata.name(odd, "a character")
        raise InvalidAction(
            f"{written[:20]!r} is not a move: {odd!r} is {what} (U+{ord(odd):04X}), not an "
            "ASCII character; write moves in plain ASCII letters and digits."
        )
    return name.lower()
