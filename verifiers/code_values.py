"""Plain values across the sandbox wall: a tagged JSON form, decoded strictly by the parent.

The sandbox returns what a program's functions returned; the trusted parent compares those
values with expected ones that never enter the sandbox. Everything that crosses back is
written by a process the program controls, so the parent trusts only this: what it decodes
is plain data built by its own decoder from builtin types, never an object with the
program's methods. A forged message can therefore claim any plain value, which is no more
than the program could have returned honestly; it cannot claim a pass.

The form, one JSON value per Python value (exact types only; a subclass is not plain):
``["none"]``, ``["bool", true]``, ``["int", "12"]`` (decimal text, so size is bounded by the
message, not by JSON numbers), ``["float", "0x1.8p+1"]`` (``float.hex``, exact, with ``inf``
and ``nan``), ``["str", "..."]``, ``["bytes", "<hex>"]``, ``["list", [...]]``,
``["tuple", [...]]``, ``["set", [...]]``, ``["frozenset", [...]]``,
``["dict", [[key, value], ...]]``. Anything else does not decode: ``ValueError``.

Decoding is the trusted parent's work on what a program returned, so it is bounded whatever
the program sends: in size (``MAX_NODES`` values, ``MAX_INT_DIGITS`` digits an integer,
``MAX_DEPTH`` levels), in the cost of building sets and dicts (more than ``MAX_SAME_HASH``
members with one hash value, which would make every insertion scan them all, is refused:
integers ``k * (2**61 - 1)`` all hash alike) and in time (``deadline``: ``DecodeTimeout``).

``read_literal`` reads a value a model wrote (``[1, 2]``, ``'abc'``, ``(3, -1)``) with the
standard library's literal parser, which builds literals and never runs code; its input is
bounded so that parsing is cheap.
"""

from __future__ import annotations

import ast
import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from selfplay.api.verifier import printable

MAX_DEPTH = 40
MAX_NODES = 100_000
MAX_INT_DIGITS = 4000
MAX_LITERAL_CHARS = 2000
MAX_SAME_HASH = 8
CONTAINERS = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}


Kind = Literal["ok", "raised", "unencodable", "missing"]


@dataclass(frozen=True)
class CallOutcome:
    """What one call gave: ``ok`` (its plain ``value``), ``raised`` or ``unencodable`` (with a
    ``detail``), or ``missing`` (the run ended, or its report was unreadable, before it)."""

    kind: Kind
    value: Any = None
    detail: str = ""


class DecodeTimeout(ValueError):
    """Decoding a value ran past its deadline (the check's time limit)."""


def encode(value: Any, depth: int = 0) -> Any:
    """The tagged form of a plain ``value``; ValueError for anything that is not plain."""
    if depth > MAX_DEPTH:
        raise ValueError(f"the value is nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if value is None:
        return ["none"]
    if kind is bool:
        return ["bool", value]
    if kind is int:
        return ["int", str(value)]
    if kind is float:
        return ["float", value.hex()]
    if kind is str:
        return ["str", value]
    if kind is bytes:
        return ["bytes", value.hex()]
    if kind in (list, tuple, set, frozenset):
        items = sorted(value, key=repr) if kind in (set, frozenset) else value
        return [kind.__name__, [encode(item, depth + 1) for item in items]]
    if kind is dict:
        return ["dict", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]]
    raise ValueError(f"a {kind.__name__} is not a plain value")


def decode(data: Any, deadline: float | None = None) -> Any:
    """The value of a tagged form; ValueError for anything malformed, oversized or unhashable,
    DecodeTimeout once ``time.monotonic()`` passes ``deadline``."""
    budget = [MAX_NODES, deadline if deadline is not None else float("inf")]
    try:
        return _decode(data, 0, budget)
    except (TypeError, OverflowError, RecursionError) as err:
        raise ValueError(f"malformed value: {type(err).__name__}") from None


def dumps(value: Any) -> str:
    """The tagged form as compact JSON text (what game states store)."""
    return json.dumps(encode(value), separators=(",", ":"))


def loads(text: str) -> Any:
    return decode(json.loads(text))


def _decode(data: Any, depth: int, budget: list) -> Any:
    _spend(depth, budget)
    tag, payload = _tagged(data)
    if tag == "none" and payload is _BARE:
        return None
    if tag in SCALARS and type(payload) is SCALARS[tag][0]:
        return SCALARS[tag][1](payload)
    if tag in CONTAINERS and type(payload) is list:
        items = [_decode(item, depth + 1, budget) for item in payload]
        if tag in ("set", "frozenset"):
            _spread(items)
        return CONTAINERS[tag](items)
    if tag == "dict" and type(payload) is list:
        pairs = [_pair(item, depth, budget) for item in payload]
        _spread([key for key, _ in pairs])
        return dict(pairs)
    raise ValueError(f"malformed {tag!r} value")


def _spend(depth: int, budget: list) -> None:
    """One more node of the value: too many, too deep or too slow is refused."""
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise ValueError("the value is too large or too deeply nested")
    if budget[0] % 256 == 0 and time.monotonic() > budget[1]:
        raise DecodeTimeout("decoding the value took longer than the time limit")


_BARE = object()  # ``["none"]``: a tag with no payload


def _tagged(data: Any) -> tuple[str, Any]:
    """``[tag, payload]`` (or ``["none"]``) as its two parts; anything else is malformed."""
    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise ValueError("malformed value")
    tag, rest = data[0], data[1:]
    if tag == "none" and not rest:
        return tag, _BARE
    if len(rest) != 1:
        raise ValueError(f"malformed {tag!r} value")
    return tag, rest[0]


def _spread(keys: list) -> None:
    """Refuse keys of a set or dict that pile up on one hash value (unhashable: TypeError)."""
    counts: dict[int, int] = {}
    for key in keys:
        code = hash(key)
        counts[code] = counts.get(code, 0) + 1
        if counts[code] > MAX_SAME_HASH:
            raise ValueError(f"more than {MAX_SAME_HASH} members of a set or dict hash alike")


def _pair(item: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
    if type(item) is not list or len(item) != 2:
        raise ValueError("malformed dict entry")
    return _decode(item[0], depth + 1, budget), _decode(item[1], depth + 1, budget)


def _same(payload: Any) -> Any:
    return payload


def _integer(text: str) -> int:
    digits = text.removeprefix("-")
    if not digits.isdigit() or not digits.isascii() or len(digits) > MAX_INT_DIGITS:
        raise ValueError("malformed int value")
    return int(text)


# tag -> (the payload's type, how it reads back)
SCALARS = {
    "bool": (bool, _same),
    "int": (str, _integer),
    "float": (str, float.fromhex),
    "str": (str, _same),
    "bytes": (str, bytes.fromhex),
}


def read_literal(text: str) -> Any:
    """A plain value written as a Python literal; ValueError naming the problem otherwise."""
    if len(text) > MAX_LITERAL_CHARS:
        raise ValueError(f"the value is {len(text)} characters long; at most {MAX_LITERAL_CHARS}")
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as err:
        problem = f"{text.strip()[:60]!r} is not a Python literal ({type(err).__name__})"
        raise ValueError(problem) from None
    encode(value)  # complex numbers and the like are not plain
    return value


# ---- the child's report ---------------------------------------------------------------


def read_report(
    report: bytes, expected_calls: int, deadline: float | None = None
) -> tuple[CallOutcome, ...]:
    """The outcome of every call from the child's last ``results`` line; untrusted data, so
    anything malformed or missing makes the calls concerned ``missing``. DecodeTimeout once
    decoding passes ``deadline``."""
    missing = CallOutcome("missing", detail="the program ended before reporting this call")
    lines = [line for line in report.split(b"\n") if line.startswith(b"results ")]
    if not lines:
        return (missing,) * expected_calls
    try:
        entries = json.loads(lines[-1][len(b"results ") :])["calls"]
        if type(entries) is not list:
            raise ValueError("not a list")
    except (ValueError, TypeError, KeyError, RecursionError):
        unreadable = CallOutcome("missing", detail="the program's report is unreadable")
        return (unreadable,) * expected_calls
    outcomes = [_outcome(entry, deadline) for entry in entries[:expected_calls]]
    return tuple(outcomes) + (missing,) * (expected_calls - len(outcomes))


def _outcome(entry: Any, deadline: float | None) -> CallOutcome:
    if (
        type(entry) is not list
        or len(entry) != 2
        or entry[0] not in ("ok", "raised", "unencodable")
    ):
        return CallOutcome("missing", detail="the program's report is unreadable")
    kind, payload = entry
    if kind != "ok":
        text = payload if type(payload) is str else "?"
        return CallOutcome(kind, detail=printable(text[:300]))
    try:
        return CallOutcome("ok", decode(payload, deadline))
    except DecodeTimeout:
        raise
    except ValueError as err:
        return CallOutcome("unencodable", detail=f"the value is not plain data: {err}")
