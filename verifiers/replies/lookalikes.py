"""Letters that look like Latin ones: read a word as it looks, not as it is encoded.

A word list (the hedge words of ``hedges``, the connectives of ``box_holders``) is dodged by
writing its words with look-alike letters: ``or`` with a Cyrillic ``о``, ``maybe`` with a
zero-width space inside, ``𝐨𝐫`` in mathematical bold. ``fold`` undoes that before a word list
is matched: Unicode's compatibility form (bold, full-width and circled letters are letters),
combining marks and invisible format characters dropped, and the Cyrillic, Greek, Armenian
and small-capital letters that look like Latin ones (``LOOKALIKES``) read as those in a word
made only of such letters. What no table can list is caught by ``MIXED_WORD``: a word that
mixes Latin letters with Greek, Cyrillic, Armenian or Cherokee ones is read as a disguised
word by the callers (a word of Latin letters with accents or ``ß`` is not mixed).
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
# Letters of the scripts whose letters pass for Latin ones: Greek, Cyrillic, Armenian, Cherokee.
OTHER_SCRIPT = (
    "\u0370-\u03ff\u0400-\u052f\u0530-\u058f\u13a0-\u13ff\u1c80-\u1c8f\u1f00-\u1fff"
    "\u2de0-\u2dff\ua640-\ua69f\uab70-\uabbf"
)
# A word (from a word boundary, so each word is tried once) with a Latin letter and another.
MIXED_WORD = rf"\b(?=[^\W\d_]*[a-zA-Z])(?=[^\W\d_]*[{OTHER_SCRIPT}])[^\W\d_]+"
NON_ASCII_WORD = re.compile(r"\b(?=[^\W\d_]*[^\x00-\x7f])[^\W\d_]+")


def fold(text: str) -> str:
    """``text`` with look-alike letters read as the Latin letters they look like (the
    module docstring says how); plain ASCII is returned as it is. A word is read in Latin
    letters only when every letter of it looks Latin (``оr``, ``ог``); a word of Russian or
    Greek keeps its letters, so only a word that mixes scripts as written is ``mixed``."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(char for char in decomposed if unicodedata.category(char) not in DROPPED)
    latin = kept.translate(LOOKALIKES)  # one letter for one: the indices stay
    if latin.isascii():
        return latin
    return NON_ASCII_WORD.sub(lambda word: kept[word.start() : word.end()], latin)
