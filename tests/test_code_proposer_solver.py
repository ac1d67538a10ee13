"""code-proposer-solver: the contract, AZR's rewards by hand, the sandbox check, the bank, a run.

Scripted players write the proposals and the answers, so every payoff below is known in
advance; the sandbox is the real one.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.game import InvalidMoveRules
from selfplay.api.tasks import TaskGame
from selfplay.core.commands.cli import main
from selfplay.games.proposers.code_proposer_solver import CodeProposerSolver, learnability
from selfplay.games.proposers.code_tasks import load_tasks, read_arguments, read_value
from selfplay.testing import check_game, scripted_playout
from selfplay.verifiers.code_sandbox import Call, run_calls

ON = {"allow_code_execution": True, "timeout": 1.0}
DOUBLE = "```python\ndef f(x):\n    return 2 * x + 1\n```\n```input\n3\n```"
REVERSE = (
    "```python\ndef f(s):\n    return s[::-1]\n```\n"
    "```input\n'abc'\n```\n```input\n'xy'\n```\n```input\n''\n```\n```input\n'hello'\n```\n"
    "```message\nthe string reversed\n```"
)


def game(kind: str, **options) -> CodeProposerSolver:
    return CodeProposerSolver({**ON, "kinds": (kind,), **options})


def seats(proposal: str, answers: list[str]) -> dict:
    """The proposer writes ``proposal``; solver_k answers ``answers[k - 1]``."""

    def solver(game, state, role, rng):
        return answers[int(role.rsplit("_", 1)[1]) - 1]

    roles = {"proposer": lambda game, state, role, rng: proposal}
    return {**roles, **{f"solver_{k}": solver for k in range(1, len(answers) + 1)}}


def out(value: str) -> str:
    return f"```output\n{value}\n```"


@pytest.mark.parametrize(
    "answers,proposer",
    [
        (["7", "8", "8", "8"], 1 - 1 / 4),  # one of four right: learnability 0.75
        (["7", "7", "8", "8"], 1 - 2 / 4),
        (["7", "7", "7", "8"], 1 - 3 / 4),
        (["7", "7", "7", "7"], 0.0),  # always solved: teaches nothing
        (["8", "8", "8", "8"], 0.0),  # never solved: teaches nothing
    ],
)
def test_rewards_match_a_hand_computation(answers, proposer):
    # f(3) = 2 * 3 + 1 = 7, so "7" is right and "8" wrong
    playout = scripted_playout(game("deduction"), seats(DOUBLE, [out(a) for a in answers]), 0)
    expected = {"proposer": proposer}
    expected.update({f"solver_{k}": float(a == "7") for k, a in enumerate(answers, 1)})
    assert playout.outcome == pytest.approx(expected)
    assert learnability([1.0, 0.0, 0.0]) == pytest.approx(2 / 3)


def test_abduction_runs_the_proposers_function_on_the_solvers_input():
    # f(x) = 2x + 1 returns 7 for x = 3 only; "3" and "3.0" both give 7
    answers = ["```input\n3\n```", "```input\n4\n```", "```input\n3.0\n```"]
    playout = scripted_playout(game("abduction", attempts=3), seats(DOUBLE, answers), 0)
    assert playout.states[-1].verdicts == ("pass", "fail", "pass")
    assert playout.outcome["proposer"] == pytest.approx(1 / 3)


def test_induction_checks_the_hidden_pairs_too():
    prompt_seen = []

    def solver(game, state, role, rng):
        prompt_seen.append(game.observe(state, role)[-1].content)
        programs = {
            "solver_1": "def f(s):\n    return s[::-1]",
            "solver_2": "def f(s):\n    return {'abc': 'cba', 'xy': 'yx'}[s]",  # shown pairs only
            "solver_3": "def f(s):\n    return s",
        }
        return f"```python\n{programs[role]}\n```"

    roles = {
        "proposer": lambda *a: REVERSE,
        **dict.fromkeys(("solver_1", "solver_2", "solver_3"), solver),
    }
    playout = scripted_playout(game("induction", attempts=3), roles, 0)
    assert playout.states[-1].verdicts == ("pass", "fail", "fail")
    assert "'cba'" in prompt_seen[0] and "'olleh'" not in prompt_seen[0]  # the hidden half


@pytest.mark.parametrize(
    "program,why",
    [
        ("def f(x):\n    return 1 // 0", "ZeroDivisionError"),
        ("def f(x):\n    while True:\n        pass", "longer than"),
        ("def f(x):\n    return repr(object())", "not deterministic"),
        ("def f(x):\n    return float('nan')", "cannot write"),
        ("def f(x):\n    return object()", "plain value"),
    ],
)
def test_invalid_proposals_pay_the_penalty(program, why):
    proposal = f"```python\n{program}\n```\n```input\n1\n```"
    playout = scripted_playout(game("deduction"), seats(proposal, [out("1")] * 4), 0)
    final = playout.states[-1]
    assert why in final.rejected
    assert playout.outcome == {"proposer": -1.0, **{f"solver_{k}": 0.0 for k in range(1, 5)}}


def test_a_forfeit_pays_only_the_offender():
    strict = CodeProposerSolver({**ON, "kinds": ("deduction",)}, InvalidMoveRules(allowance=0))
    banned = (
        "```python\nimport random\ndef f(x):\n    return random.random()\n```\n```input\n1\n```"
    )
    playout = scripted_playout(strict, seats(banned, [out("1")] * 4), 0)
    assert playout.outcome == {"proposer": -1.5, **{f"solver_{k}": 0.0 for k in range(1, 5)}}
    unreadable = scripted_playout(strict, seats(DOUBLE, ["I think seven", out("7")] * 2), 0)
    assert unreadable.outcome["solver_1"] == -1.5
    assert {r: v for r, v in unreadable.outcome.items() if r != "solver_1"} == dict.fromkeys(
        ("proposer", "solver_2", "solver_3", "solver_4"), 0.0
    )


def test_a_solver_program_cannot_forge_its_pass():
    forger = (
        "```python\nimport os\ndef f(s):\n    return s\n"
        "for fd in range(3, 64):\n    try:\n        os.write(fd, b'done\\n')\n"
        "    except OSError:\n        pass\nos._exit(0)\n```"
    )
    roles = seats(REVERSE, [forger, forger])
    playout = scripted_playout(game("induction", attempts=2), roles, 0)
    assert playout.states[-1].verdicts == ("fail", "fail")


def test_code_execution_is_off_unless_switched_on():
    with pytest.raises(ConfigError, match="allow_code_execution=true"):
        CodeProposerSolver()


def test_check_game():
    report = check_game(CodeProposerSolver(ON, InvalidMoveRules(allowance=1)), matches=12)
    assert report.matches == 12


def test_held_out_tasks_for_the_solver():
    code_game = CodeProposerSolver(ON)
    assert isinstance(code_game, TaskGame)
    states = code_game.task_states("held_out", 6, seed=0)
    assert len(states) == 6 and states == code_game.task_states("held_out", 6, seed=0)
    assert code_game.task_states("transfer", 6, seed=0) == []
    held_out = {task.id for task in load_tasks("held_out")}
    assert {state.task_id for state in states} <= held_out
    for state in states[:3]:
        right = code_game.legal_actions(state, "solver_1")[0]
        assert code_game.task_solved(code_game.step(state, "solver_1", right)) is True


def test_the_seed_bank_is_split_and_its_outputs_are_what_the_programs_return():
    train, held_out = load_tasks("train"), load_tasks("held_out")
    assert len(train) >= 24 and len(held_out) >= 10
    assert not {t.id for t in train} & {t.id for t in held_out}
    assert not {t.program for t in train} & {t.program for t in held_out}
    for task in train + held_out:
        calls = [Call("f", read_arguments(text)) for text in task.inputs]
        result = run_calls(task.program, calls)
        values = [outcome.value for outcome in result.outcomes]
        assert values == [read_value(text) for text in task.outputs], task.id


def test_selfplay_games_lists_it(capsys):
    assert main(["games", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["code-proposer-solver"]["roles"][:2] == ["proposer", "solver_1"]


def test_one_iteration_with_the_tiny_model_through_the_cli(tmp_path):
    command = [
        sys.executable, "-m", "selfplay.core.commands.cli", "run",
        "--game", "code-proposer-solver", "--iterations", "1", "--matches", "4",
        "--cold-start", "0", "--set", "eval.matches=2", "--set", "generation.max_new_tokens=16",
        "--set", "game_options.allow_code_execution=true", "--out", str(tmp_path), "--name", "run",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    episodes = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    assert len(episodes) == 4
    assert "reward/outcome/proposer" in (tmp_path / "run" / "metrics.csv").read_text()
