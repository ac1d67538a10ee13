"""What each role of the code proposer/solver game is told, and answers for scripted players.

A solver sees only what its task gives: deduction the program and the input; abduction the
program and the output; induction the message and the first half of the input/output pairs
(the other half stays hidden and decides with them). The solvers of one task all get the same
prompt, so their attempts are independent samples of one question.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from selfplay.api.types import Message
from selfplay.verifiers import code_values

if TYPE_CHECKING:
    from selfplay.games.proposers.code_proposer_solver import (
        CodeProposerSolverOptions,
        CodeTaskState,
    )

RULES = (
    "You are the proposer in a code reasoning game. Write a short, deterministic Python "
    "function named f{inputs}. {task} Your score is highest when the solvers succeed sometimes "
    "but not always (1 minus their success rate, and 0 if all or none succeed); a program that "
    "fails to run on its input, or gives different results on two runs, scores {penalty:g}. "
    "Use plain Python only: no imports of random, time, os or other system modules, no files, "
    "no printing. Answer with fenced blocks, exactly like the example:\n{form}"
)
TASKS = {
    "deduction": "A solver will see f and the input and must predict what f returns.",
    "abduction": "A solver will see f and what it returns, and must find an input giving that.",
    "induction": (
        "A solver will see your message and the outputs of f for the first half of the "
        "inputs, and must write f; it is checked on every input, the hidden ones included."
    ),
}
FORMS = {
    "deduction": "```python\ndef f(...):\n    ...\n```\n```input\n<the arguments of f>\n```",
    "induction": (
        "```python\ndef f(...):\n    ...\n```\n```input\n<arguments>\n```  (one block per input)"
        "\n```message\n<one line on what f does>\n```"
    ),
}
SOLVERS = {
    "deduction": (
        "You are the solver. Work out exactly what the call returns. Think briefly, then give "
        "the value as a Python literal in a block:\n```output\n<the value>\n```"
    ),
    "abduction": (
        "You are the solver. Find arguments for f so that it returns the output shown. Think "
        "briefly, then give them as Python literals, separated by commas, in a block:\n"
        "```input\n<the arguments of f>\n```"
    ),
    "induction": (
        "You are the solver. Write a Python function f that does what the message says and "
        "matches the examples; it is also checked on hidden inputs. Give it in a block:\n"
        "```python\ndef f(...):\n    ...\n```"
    ),
}


def shown_pairs(state: CodeTaskState) -> int:
    """Induction: how many of the input/output pairs the solver sees (the first half)."""
    return (len(state.inputs) + 1) // 2


def proposer(state: CodeTaskState, options: CodeProposerSolverOptions) -> list[Message]:
    count = options.induction_inputs
    inputs = (
        f" and {count} different inputs for it"
        if state.kind == "induction"
        else (" and one input for it")
    )
    rules = RULES.format(
        inputs=inputs,
        task=TASKS[state.kind],
        penalty=options.invalid_proposal_payoff,
        form=FORMS.get(state.kind, FORMS["deduction"]),
    )
    user = f"Task kind: {state.kind}.\nAn example of the form:\n{state.example}\nYour task:"
    return [Message("system", rules), Message("user", user)]


def solver(state: CodeTaskState) -> list[Message]:
    program = f"```python\n{(state.program or '').strip()}\n```"
    if state.kind == "deduction":
        user = f"{program}\nWhat does f({state.inputs[0]}) return?"
    elif state.kind == "abduction":
        user = f"{program}\nFind an input for which f returns: {_output(state, 0)!r}"
    else:
        examples = "\n".join(
            f"f({state.inputs[i]}) == {_output(state, i)!r}" for i in range(shown_pairs(state))
        )
        user = f"Message: {state.message}\nExamples:\n{examples}"
    return [Message("system", SOLVERS[state.kind]), Message("user", user)]


def right_and_wrong(state: CodeTaskState) -> tuple[str, str]:
    """A right answer and a legal wrong one (for ``legal_actions`` and scripted players)."""
    if state.kind == "deduction":
        value = _output(state, 0)
        return f"```output\n{value!r}\n```", f"```output\n{[value]!r}\n```"
    if state.kind == "abduction":
        return f"```input\n{state.inputs[0]}\n```", "```input\nNone, None, None\n```"
    program = (state.program or "").strip()
    return f"```python\n{program}\n```", "```python\ndef f(*args):\n    return None\n```"


def _output(state: CodeTaskState, index: int) -> Any:
    return code_values.loads(state.outputs[index])
