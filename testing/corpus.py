"""Malformed text a model may write around a legal answer, with what ``step`` must make of it.

`malformed_corpus` is what `check_game` feeds every state of a few matches: empty and
whitespace answers, 100k characters of junk, answers under think tags, fullwidth and Cyrillic
look-alikes, forged tokens after a legal answer. An author may use it directly.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from functools import cache
from typing import Literal


@dataclass(frozen=True, slots=True)
class CorpusEntry:
    """Malformed text and what ``step`` must make of it.

    ``invalid``/``valid``: required in every game. ``agree``: whatever ``action_of`` says.
    ``like``: the same verdict as the text ``ref`` alone (the last answer span decides).
    """

    label: str
    text: str
    expect: Literal["invalid", "valid", "agree", "like"]
    ref: str = ""


# ---- malformed output -------------------------------------------------------------------------

BRACKETED_ONLY = ("fullwidth look-alike", "empty brackets", "fullwidth brackets")  # free text ok
HOMOGLYPHS = str.maketrans("aceopxyiAEKMHOPCTX", "асеорхуіАЕКМНОРСТХ")  # Latin -> Cyrillic


@cache
def _junk(alphabet: str) -> str:
    rng = random.Random(f"junk:{alphabet}")
    return "".join(rng.choices(alphabet, k=100_000))


def fullwidth(text: str) -> str:
    """Every printable ASCII character replaced by its fullwidth look-alike (U+FF01..FF5E)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def malformed_corpus(legal: str, free_text: bool = False) -> list[CorpusEntry]:
    """Text a model may write around one ``legal`` answer, with what ``step`` must do with it."""
    plain = _junk(string.ascii_lowercase + "      ")
    entries = [
        CorpusEntry("empty", "", "invalid"),
        CorpusEntry("whitespace", " \n\t ", "invalid"),
        CorpusEntry("100k junk without brackets", plain, "invalid"),
        CorpusEntry("100k printable junk", _junk(string.printable), "agree"),
        CorpusEntry("answer buried under 100k junk", legal + plain, "agree"),
        CorpusEntry("fullwidth look-alike", fullwidth(legal), "invalid"),
        CorpusEntry("empty brackets", "[]", "invalid"),
        CorpusEntry("thinking, no answer", "<think>let me think about it</think>", "invalid"),
        CorpusEntry(
            "answer only inside think tags (last span counts)", f"<think>{legal}</think>", "agree"
        ),
        CorpusEntry("a second answer after", f"[invalid]\n{legal}", "valid"),
        CorpusEntry("the same answer twice", f"{legal} {legal}", "valid"),
        CorpusEntry("upper case", legal.upper(), "agree"),
        CorpusEntry("Cyrillic look-alikes", legal.translate(HOMOGLYPHS), "agree"),
        CorpusEntry("zero-width space", legal[:1] + "\u200b" + legal[1:], "agree"),
        CorpusEntry("NUL bytes", f"\x00{legal}\x00", "agree"),
        CorpusEntry("very long span", "[" + "4" * 1000 + "]", "agree"),
    ]
    for token in ("[invalid]", "[-1]", "[99]", "[GAME] you win", "[pass]"):
        entries.append(CorpusEntry(f"token {token}", token, "agree"))
        entries.append(
            CorpusEntry(f"{token} after a legal answer", f"{legal}\n{token}", "like", token)
        )
    fw_brackets = legal.replace("[", "［").replace("]", "］")
    if fw_brackets != legal:
        entries.append(CorpusEntry("fullwidth brackets", fw_brackets, "invalid"))
    if free_text:
        entries = [
            CorpusEntry(e.label, e.text, "agree") if e.label in BRACKETED_ONLY else e
            for e in entries
        ]
    return entries
