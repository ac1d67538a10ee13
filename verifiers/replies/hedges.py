"""Prose that offers another value after a statement: "or possibly 3", "3 is also possible".

A reply states one final answer (``answers``). Its prose may not offer another value. After
a statement, up to the next one (the working before the first statement is free), a value
(a digit, maths, a number word) is offered when, in its sentence,

- it is the first value after a hedge word (``HEDGE``: ``The answer is $\\boxed{2}$, or
  possibly 3.``), or
- the sentence holds an offering word (``OFFER``: ``So we get \\boxed{2}; 3 is also
  possible.``, ``3 works too``, ``another solution is 3``) and no negation (``NEGATION``:
  ``x = 3 is not a solution``, ``we discard x = -1``).

A value offered (maths, or a word with what operators join to it: ``2 + 3 = 5``) is one more
statement: the verifier compares it with the final answer, so an equal restatement (``or
equivalently $\\frac{12}{2}$``) is fine and anything else, a number word included, hedges.
Not offered: a number that labels something (``part 2``, ``step 3``, ``equation (1)``) and
``one`` as a pronoun (``one can check``). Words are matched as they look
(``lookalikes.fold``), and a word that mixes Latin letters with another script's counts as a
hedge word. A hedge in prose never changes which value is compared with the reference (that
is the final answer); the rule keeps a reply that offers two answers from passing as one.
Everything here is linear in the length of the text.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from selfplay.verifiers.replies.lookalikes import MIXED_WORD, fold

MAX_VALUE_CHARS = 400  # a value as long as a statement at most
MAX_OFFERS = 20  # distinct values offered: more is a hedge by itself
MAX_READS = 1000  # hedge words, offering sentences and values read: more is a hedge too
SNIPPET_CHARS = 60

HEDGE_WORDS = "or maybe possibly perhaps probably either alternatively otherwise unless instead"
HEDGE = re.compile(rf"\b(?:{'|'.join(HEDGE_WORDS.split())})\b|{MIXED_WORD}")
OFFER = re.compile(
    r"\b(?:possible|valid|works|acceptable|alternative|(?:also|another)\s+(?:(?:a|an)\s+)?"
    r"(?:solution|answer|root|value|possibility|option|candidate|correct|right)s?)\b"
)
NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|impossible|invalid|only|extraneous|reject\w*|discard\w*"
    r"|exclud\w*|fail\w*)\b|n't\b"
)
NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred thousand million billion half halves third thirds quarter quarters"
)
# A digit, maths ($, \(, \[, a command), or a number word: matched on lowered text.
VALUE = re.compile(
    rf"\d|\$|\\[(\[a-z]|(?<![a-z0-9_])(?:{'|'.join(NUMBER_WORDS.split())})(?![a-z0-9_])"
)
SENTENCE_END = re.compile(r"[.;!?](?=\s|$)|\n")
LAST_SENTENCE_END = re.compile(r"(?s:.*)(?:[.;!?](?=\s)|\n)")
LABEL = re.compile(
    r"\b(?:part|step|question|problem|exercise|example|case|figure|fig|section|chapter|page"
    r"|line|equation|eq|method|approach|item|lemma|theorem|table|round|stage|appendix"
    r"|version|hint|note|remark|option|choice)s?\.?[\s-]*(?:no\.?\s*|number\s*|#\s*)?[(\[]?\s*\Z"
)
PRONOUN_AFTER = re.compile(
    r"\s+(?:can|could|may|might|must|should|would|will|cannot|has|had|gets|got|sees|finds"
    r"|checks|verifies|obtains|notes|needs|of|another|way)\b"
)
PRONOUN_BEFORE = re.compile(r"\b(?:no|any|every|each|the|this|that|which|some)\s+\Z")
MATH_CLOSERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
# One word, or words joined by operators: "2 + 3 = 5" is one value (7 = 3 + 4 states 7).
TOKEN = re.compile(r"\S+(?:\s*(?:[-+*/^=<>]|\\cdot|\\times|\\div)\s*[-+]?[\d\\(]\S*)*")
SIGNS = "-+.\u00b1\u2213\u2212\u2013"
SPACES = re.compile(r"\s+")


class Offer(NamedTuple):
    """A value the prose offers: the words that offer it (for the verdict) and the value."""

    words: str
    value: str


def prose_offers(text: str, spans: list[tuple[int, int]]) -> list[Offer]:
    """The values offered in the prose of ``text`` after its statements (``spans``, as
    (start, end)), up to the next statement; each gap is folded and read once, and ends a
    sentence (no word runs on from one gap into the next)."""
    gaps, ends, reach, length = [], [], -1, 0
    for start, end in sorted(spans):
        if reach >= 0 and start > reach + 1:
            gaps.append(fold(text[reach:start]) + "\n")
            length += len(gaps[-1])
            ends.append(length)
        reach = max(reach, end)
    if reach < len(text) - 1:
        gaps.append(fold(text[reach:]) + "\n")
        ends.append(length + len(gaps[-1]))
    return _Reader("".join(gaps), ends).offers()


def offers_in(text: str) -> list[Offer]:
    """The values a piece of prose offers (an answer line the grammar cannot read)."""
    folded = fold(text)
    return _Reader(folded, [len(folded)]).offers()


def hedge_word(text: str) -> str:
    """The part of ``text`` from its first hedge word on, or ""."""
    folded = fold(text)
    found = HEDGE.search(folded.lower())
    return "" if found is None else _snippet(folded, found.start())


def prose_hedge_detail(offered: str) -> str:
    """The verdict detail for a reply whose prose offers another value."""
    return f"the reply hedges: it offers another value ({offered!r}); state one answer."


def hedge_detail(values: list[str]) -> str:
    """The verdict detail for a reply that states different answers."""
    shown = ", ".join(repr(value[:30]) for value in values[:3])
    return (
        f"the reply states {len(values)} different final answers ({shown}); a reply must "
        "state exactly one final answer (repeating the same value is fine)."
    )


def too_many_offers() -> Offer:
    """What stands for more than ``MAX_OFFERS`` different values offered, or more than
    ``MAX_READS`` hedge words, offering sentences and values to read: never equal."""
    return Offer(f"more than {MAX_OFFERS} values offered", "\\boxed{")


class _Reader:
    """Reads the prose gaps (joined into one string; ``ends`` are where each gap ends)."""

    def __init__(self, text: str, ends: list[int]) -> None:
        self.text, self.ends = text, ends
        self.low = text.lower()
        if len(self.low) != len(text):  # a letter whose lower case is longer: read as is
            self.low = text
        self.found: dict[str, Offer] = {}
        self.reads = 0
        self._last_end = (0, 0)

    def offers(self) -> list[Offer]:
        self._hedged()
        self._offered()
        offers = list(self.found.values())
        if len(offers) > MAX_OFFERS or self.reads > MAX_READS:
            return [*offers[:MAX_OFFERS], too_many_offers()]
        return offers

    def _reading(self) -> bool:
        """Whether there is budget left to read one more thing (and spend it)."""
        self.reads += 1
        return self.reads <= MAX_READS and len(self.found) <= MAX_OFFERS

    def _hedged(self) -> None:
        """Each hedge word's first value in its sentence."""
        position = 0
        while (hedge := HEDGE.search(self.low, position)) is not None and self._reading():
            end = self._sentence_end(hedge.start())
            value = next(self._values(hedge.end(), end, hedge.end()), None)
            if value is None:
                position = max(end, hedge.end())
                continue
            self._add(hedge.start(), value[0])
            position = value[1]

    def _offered(self) -> None:
        """Every value of a sentence that holds an offering word and no negation."""
        position = 0
        while (word := OFFER.search(self.low, position)) is not None and self._reading():
            start = self._sentence_start(word.start(), position)
            end = self._sentence_end(word.start())
            if NEGATION.search(self.low, start, end) is None:
                for value, _ in self._values(start, end, start):
                    self._add(start, value)
            position = max(end, word.end())

    def _gap(self, at: int) -> tuple[int, int]:
        """(start, end) of the gap that holds ``at``."""
        gap = bisect.bisect_right(self.ends, at)
        end = self.ends[gap] if gap < len(self.ends) else len(self.text)
        return (self.ends[gap - 1] if gap else 0), end

    def _sentence_start(self, at: int, floor: int) -> int:
        """Where the sentence holding ``at`` starts (not before ``floor`` or its gap)."""
        low = max(self._gap(at)[0], floor)
        before = LAST_SENTENCE_END.match(self.low, low, at)
        return before.end() if before else low

    def _sentence_end(self, at: int) -> int:
        """Where the sentence holding ``at`` ends; the last answer is reused while ``at``
        is inside that sentence, so a long sentence is searched once."""
        searched, end = self._last_end
        if searched <= at < end:
            return end
        after = SENTENCE_END.search(self.low, at, self._gap(at)[1])
        end = after.start() if after else self._gap(at)[1]
        self._last_end = (at, end)
        return end

    def _values(self, position: int, end: int, sentence: int):
        """(value, where it ends) for each value in ``[position, end)`` that is not a label
        number or the pronoun ``one``."""
        while (mark := VALUE.search(self.low, position, end)) is not None and self._reading():
            value, position = self._value_at(mark.start(), end)
            begin = mark.start()  # a sign or point before it belongs to it: "or -3", "or .5"
            while begin > max(sentence, mark.start() - 2) and self.text[begin - 1] in SIGNS:
                begin -= 1
            if not self._exempt(mark, sentence):
                yield self.text[begin : mark.start()] + value, position

    def _value_at(self, start: int, end: int) -> tuple[str, int]:
        """The value that starts at ``start``: maths up to its closer, else one word."""
        for opener, closer in MATH_CLOSERS:
            if self.text.startswith(opener, start):
                inner = start + len(opener)
                close = self.text.find(closer, inner, inner + MAX_VALUE_CHARS + 1)
                if close < 0:
                    stop = min(inner + MAX_VALUE_CHARS + 1, len(self.text))
                    return self.text[inner:stop], stop
                return self.text[inner:close], close + len(closer)
        token = TOKEN.match(self.text, start, min(end, start + MAX_VALUE_CHARS + 1))
        word = token.group() if token else self.text[start]
        value = word.rstrip(".,;:!?")
        unopened = value.count(")") + value.count("]") - value.count("(") - value.count("[")
        while unopened > 0 and value.endswith((")", "]")):  # "(or 3)" offers 3
            value, unopened = value[:-1], unopened - 1
        return value, start + max(len(word), 1)

    def _exempt(self, mark: re.Match[str], sentence: int) -> bool:
        if mark.group() == "one":
            after = PRONOUN_AFTER.match(self.low, mark.end())
            lookback = max(sentence, mark.start() - 16)
            before = PRONOUN_BEFORE.search(self.low, lookback, mark.start())
            return after is not None or before is not None
        if mark.group().isdigit():
            lookback = max(sentence, mark.start() - 32)
            return LABEL.search(self.low, lookback, mark.start()) is not None
        return False

    def _add(self, start: int, value: str) -> None:
        key = SPACES.sub(" ", value).strip()
        self.found.setdefault(key, Offer(_snippet(self.text, start), value))


def _snippet(text: str, start: int) -> str:
    return SPACES.sub(" ", text[start : start + SNIPPET_CHARS]).strip()
