"""Letters that look like Latin ones: read a word as it looks, not as it is encoded.

A word list (the hedge words of ``hedges``, the connectives of ``box_holders``) is dodged by
writing its words with look-alike letters: ``or`` with a Cyrillic ``о``, ``maybe`` with a
zero-width space inside, ``𝐨𝐫`` in mathematical bold. ``fold`` undoes that before a word list
is matched: Unicode's compatibility form (bold, full-width and circled letters are letters),
combining marks and invisible format characters dropped, and the Cyrillic, Greek, Armenian
and small-capital letters that look like Latin ones (``LOOKALIKES``) read as those. What no
table can list is caught by ``mixed_script``: a word that mixes Latin letters with letters of
another script is read as a disguised word by the callers.
"""

from __future__ import annotations

import re
import unicodedata

LOOKALIKES = str.maketrans(
    "аеорсухіїјѕԁһԛԝӏгпьүѡ"  # Cyrillic small
    "АВЕІЈКМНОРСТУХЅҮԚԜҺӀ"  # Cyrillic capital
    "αγεικνορτυχω"  # Greek small
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"  # Greek capital
    "օսոհ"  # Armenian
    "ıȷɑɡɩʀɾᴀʙᴄᴅᴇʜɪᴊᴋʟᴍɴᴏᴘᴛᴜᴠᴡʏᴢ",  # Latin variants and small capitals
    "aeopcyxiijsdhqwlrnbyw"
    "ABEIJKMHOPCTYXSYQWHI"
    "ayeikvoptuxw"
    "ABEZHIKMNOPTYX"
    "ounh"
    "ijagirrabcdehijklmnoptuvwyz",
)
DROPPED = frozenset(("Mn", "Me", "Cf"))  # combining marks, invisible format characters
# A word (from a word boundary, so each word is tried once) with a Latin letter and another.
MIXED_WORD = r"\b(?=[^\W\d_]*[a-zA-Z])(?=[^\W\d_]*[^\W\d_a-zA-Z])[^\W\d_]+"
MIXED = re.compile(MIXED_WORD)


def fold(text: str) -> str:
    """``text`` with look-alike letters read as the Latin letters they look like (the
    module docstring says how); plain ASCII is returned as it is."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(char for char in decomposed if unicodedata.category(char) not in DROPPED)
    return kept.translate(LOOKALIKES)


def mixed_script(text: str, start: int = 0, end: int | None = None) -> re.Match[str] | None:
    """The first word of ``text[start:end]`` (already folded) that mixes Latin letters with
    letters of another script, if any."""
    if text.isascii():
        return None
    return MIXED.search(text, start, len(text) if end is None else end)
