"""What the code proposer/solver game reads and writes: fenced blocks, literals, the bank.

Answers are fenced blocks, as in Absolute Zero: a program in a ```` ```python ```` block, the
arguments of ``f`` in ```` ```input ```` blocks, a value in an ```` ```output ```` block, a one-line
description in a ```` ```message ```` block. The last block of the wanted kind is the answer; a
bracketed answer (``[...]``, the form of other games) after the last block is a later answer
in the wrong form, so the move is invalid.

Values are Python literals (``3``, ``'abc'``, ``[1, (2, 3)]``, ``{'a': 1}``), read by the
literal parser of ``selfplay.verifiers.code_values``, which builds values and never runs code.
An input block is the argument list of ``f``: ``[1, 2], 3`` calls ``f([1, 2], 3)``.

A program is checked here only for form (parsing, never running): it must define ``f`` and may
not import modules whose results change from run to run or that reach the system. That is a
courtesy to the proposer, not a defence: the sandbox runs every program several times, and the
verdict never depends on what a program says about itself.

The seed bank (``games/data/code_tasks.jsonl``) holds short functions with inputs, the outputs
they give (checked by running them, in the tests) and a description, in a ``train`` split
(examples shown to the proposer) and a ``held_out`` split (evaluation only).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from selfplay.api.game import MAX_TEXT_CHARS, InvalidAction
from selfplay.verifiers.code_values import read_literal

Kind = Literal["deduction", "abduction", "induction"]
KINDS: tuple[Kind, ...] = ("deduction", "abduction", "induction")
BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)
BRACKETED = re.compile(r"\[[^\[\]\n]{0,80}\]")
PYTHON_LABELS = ("python", "py", "python3", "")
MAX_PROGRAM_CHARS = 1500
MAX_VALUE_CHARS = 200
MAX_MESSAGE_CHARS = 200
# A proposal may import only these: modules whose results depend on their arguments alone. A
# list of modules to refuse missed ``posix``, ``_datetime`` and ``sqlite3`` (each reads the
# clock); a list of modules to allow misses nothing new.
PURE_MODULES = frozenset(
    [
        "__future__",
        "abc",
        "array",
        "bisect",
        "cmath",
        "collections",
        "copy",
        "dataclasses",
        "decimal",
        "enum",
        "fractions",
        "functools",
        "heapq",
        "itertools",
        "json",
        "math",
        "numbers",
        "operator",
        "re",
        "statistics",
        "string",
        "textwrap",
        "typing",
        "unicodedata",
    ]
)
UNSTABLE_CALLS = frozenset(
    [
        "open",
        "input",
        "eval",
        "exec",
        "compile",
        "__import__",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "hash",
        "id",
    ]
)


@dataclass(frozen=True)
class Proposal:
    program: str
    inputs: tuple[tuple[Any, ...], ...]
    message: str = ""


@dataclass(frozen=True)
class BankTask:
    id: str
    split: str
    program: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    message: str


def blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of ``text`` as (label, content); InvalidAction when there are none
    or a bracketed answer follows the last one."""
    tail = text[-MAX_TEXT_CHARS:]
    found = [(m.group(1).lower(), m.group(2)) for m in BLOCK.finditer(tail)]
    if not found:
        raise InvalidAction("no ``` block found; write the answer in fenced blocks.")
    after = tail[tail.rfind("```") + 3 :]
    if BRACKETED.search(after):
        raise InvalidAction("a bracketed answer follows the ``` blocks; answer in blocks only.")
    return found


def last_block(text: str, labels: tuple[str, ...], what: str) -> str:
    chosen = [content for label, content in blocks(text) if label in labels]
    if not chosen:
        raise InvalidAction(f"no ```{labels[0]} block with {what} found.")
    return chosen[-1].strip()


def read_value(text: str) -> Any:
    """A value written as a Python literal; InvalidAction naming the problem otherwise."""
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidAction(f"the value has {len(text)} characters; keep it to {MAX_VALUE_CHARS}.")
    return _literal(text)


def read_arguments(text: str) -> tuple[Any, ...]:
    """``'[1, 2], 3'`` -> ``([1, 2], 3)``: the arguments of ``f``, one literal each."""
    text = text.strip()
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidAction(f"the input has {len(text)} characters; keep it to {MAX_VALUE_CHARS}.")
    return _literal(f"({text},)") if text else ()


def _literal(text: str) -> Any:
    try:
        return read_literal(text)
    except ValueError as err:
        raise InvalidAction(f"{err}; write a Python literal such as 3, 'abc' or [1, 2].") from None


def show_arguments(args: tuple[Any, ...]) -> str:
    return ", ".join(repr(arg) for arg in args)


def check_program(source: str, strict: bool = True) -> str:
    """``source`` when it parses and defines ``f``; with ``strict``, also no module outside
    ``PURE_MODULES`` and no unstable call. InvalidAction naming the problem otherwise."""
    if len(source) > MAX_PROGRAM_CHARS:
        raise InvalidAction(
            f"the program has {len(source)} characters; at most {MAX_PROGRAM_CHARS}."
        )
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise InvalidAction(f"the program is not valid Python: {type(err).__name__}.") from None
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if "f" not in names:
        raise InvalidAction("the program must define a function named f at the top level.")
    if strict:
        for node in ast.walk(tree):
            _check_node(node)
    return source


def _check_node(node: ast.AST) -> None:
    if isinstance(node, ast.Import):
        modules = {alias.name.split(".")[0] for alias in node.names}
    elif isinstance(node, ast.ImportFrom):
        modules = {(node.module or "").split(".")[0]}
    else:
        modules = set()
    banned = sorted(modules - PURE_MODULES)
    if banned:
        raise InvalidAction(
            f"the program imports {', '.join(banned)}; use plain Python only (math, "
            "itertools, functools, collections, re and the like)."
        )
    called = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    if called and node.func.id in UNSTABLE_CALLS:
        raise InvalidAction(f"the program calls {node.func.id}(); use plain Python only.")


def parse_proposal(text: str, kind: Kind, inputs_wanted: int) -> Proposal:
    """The program, inputs and message of a proposal of ``kind``; InvalidAction otherwise."""
    found = blocks(text)
    programs = [i for i, (label, _) in enumerate(found) if label in PYTHON_LABELS]
    if not programs:
        raise InvalidAction("no ```python block with the function f found.")
    start = programs[-1]
    program = check_program(found[start][1].strip())
    rest = found[start + 1 :]
    inputs = tuple(read_arguments(body) for label, body in rest if label == "input")
    messages = [body.strip() for label, body in rest if label == "message"]
    wanted = inputs_wanted if kind == "induction" else 1
    if len(inputs) < wanted:
        raise InvalidAction(f"give {wanted} ```input block(s) after the ```python block.")
    inputs = inputs[-wanted:] if kind != "induction" else inputs[:wanted]
    if len({show_arguments(args) for args in inputs}) != len(inputs):
        raise InvalidAction("the inputs must all differ.")
    message = messages[-1] if messages else ""
    if kind == "induction" and not message:
        raise InvalidAction("add a ```message block: one line on what f does.")
    if len(message) > MAX_MESSAGE_CHARS or "\n" in message:
        raise InvalidAction(
            f"the message must be one line of at most {MAX_MESSAGE_CHARS} characters."
        )
    return Proposal(program, inputs, message)


def format_proposal(program: str, inputs: tuple[str, ...], message: str = "") -> str:
    """A proposal as the model writes it (inputs already in argument-list form)."""
    parts = [f"```python\n{program.strip()}\n```"]
    parts += [f"```input\n{args}\n```" for args in inputs]
    if message:
        parts.append(f"```message\n{message}\n```")
    return "\n".join(parts)


@cache
def _bank() -> tuple[BankTask, ...]:
    data = resources.files("selfplay.games").joinpath("data", "code_tasks.jsonl")
    records = [json.loads(line) for line in data.read_text("utf-8").splitlines() if line.strip()]
    return tuple(
        BankTask(
            id=r["id"],
            split=r["split"],
            program=r["program"],
            inputs=tuple(r["inputs"]),
            outputs=tuple(r["outputs"]),
            message=r["message"],
        )
        for r in records
    )


def load_tasks(split: str) -> list[BankTask]:
    """The seed tasks of ``split`` (``train``, ``held_out`` or ``all``), in file order."""
    if split not in ("train", "held_out", "all"):
        raise ValueError(f"Unknown code bank split {split!r}; splits are: train, held_out, all.")
    return [task for task in _bank() if split in ("all", task.split)]
