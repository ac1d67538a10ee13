"""Attacks on the code sandbox's trusted parent, kind by kind.

The parent decodes what a program returned, compares it and waits for the report; each of
these could be turned against it before this round: a set whose members all hash alike
stalled the decoding for a minute, a value that broke the comparison made the verdict an
error, a detached grandchild holding the results pipe outlived the deadline where there are
no namespaces, the package's own files (the task bank) were readable from a wheel install,
a run could fill the disk file by file, and a program depending on the clock passed the
two-run determinism check. No check may run past its limit by more than 10% (plus the
child's start-up), and no wrong value may be an ``error``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from selfplay.verifiers import code_sandbox, code_values
from selfplay.verifiers.code_sandbox import Call, Limits, isolation, run_calls
from selfplay.verifiers.code_tests import judge, parse_tests
from selfplay.verifiers.code_verifier import CodeVerifier

WALL = 2.0
STARTUP = 1.0  # the child interpreter's start and the confinement, before the clock runs
ROOT = Path(__file__).resolve().parents[1]
ADD = "assert add(2, 3) == 5"
FORGE = """
import json, os, sys
fd = json.loads(sys.argv[1])['results_fd']
def send(value):
    data = b'results ' + json.dumps({'calls': [['ok', value]]}).encode() + b'\\n'
    while data:
        data = data[os.write(fd, data):]
"""
P = "(2 ** 61 - 1)"  # integers k * P + c all hash to c
STALLS = {
    "a set of ints that hash alike": f"['set', [['int', str(k * {P} + 5)] for k in range(60000)]]",
    "a dict whose keys hash alike": (
        f"['dict', [[['int', str(k * {P} + 5)], ['int', '5']] for k in range(60000)]]"
    ),
    "tuples that hash alike": (
        f"['frozenset', [['tuple', [['int', str(k * {P})]]] for k in range(60000)]]"
    ),
    "floats that hash alike": "['set', [['float', (2.0 ** (61 * k)).hex()] for k in range(17)]]",
    "a set nested in a list": f"['list', [['set', [['int', str(k * {P})] for k in range(30000)]]]]",
    "nesting beyond the cap": "eval(\"['list', [\" * 900 + \"['int', '5']\" + \"]]\" * 900)",
    "many huge integers": "['list', [['int', '9' * 4000] for _ in range(900)]]",
}


def within_limit(seconds: float, wall: float = WALL) -> bool:
    return seconds <= 1.1 * wall + STARTUP


@pytest.fixture()
def verifier():
    return CodeVerifier(allow_code_execution=True, timeout=WALL)


# ---- 6. the parent's work on a report is bounded ---------------------------------------------


@pytest.mark.parametrize("name", list(STALLS))
def test_a_forged_report_cannot_stall_the_parent(verifier, name):
    program = FORGE + f"send({STALLS[name]})\nos._exit(0)\n"
    began = time.monotonic()
    verdict = verifier.verify(program, ADD)
    assert within_limit(time.monotonic() - began), name
    assert verdict.status in ("fail", "timeout"), verdict


def test_an_honest_large_value_still_decodes():
    program = "def f():\n    return set(range(60000)), {str(k): k for k in range(15000)}"
    result = run_calls(program, [Call("f")])
    assert result.outcomes[0].kind == "ok"
    assert result.outcomes[0].value == (set(range(60000)), {str(k): k for k in range(15000)})


def test_decoding_counts_against_the_time_limit():
    data = ["list", [["int", "9" * 3000] for _ in range(500)]]
    with pytest.raises(code_values.DecodeTimeout):
        code_values.decode(data, deadline=time.monotonic() - 1)
    program = (
        "import time\ntime.sleep(1.9)\n"
        "def f():\n    return [int('9' * 3000) + k for k in range(1000)]"
    )
    began = time.monotonic()
    result = run_calls(program, [Call("f")], Limits(wall_seconds=WALL))
    assert within_limit(time.monotonic() - began)
    assert result.status in ("ok", "timeout")


# ---- 7. a comparison that raises on the candidate's value is a fail --------------------------


@pytest.mark.parametrize(
    "body,test",
    [
        ("return 10 ** 400", "import math\nassert math.isclose(add(2, 3), 5.0)"),
        ("return -10 ** 400", "from math import isclose\nassert isclose(add(2, 3), 5.0)"),
        ("return 10 ** 400", "import math\nassert math.isclose(add(2, 3), 5.0, rel_tol=1e-3)"),
        ("return 10 ** 400", "import math\nassert math.isclose(add(2, 3), 5, abs_tol=0.5)"),
        ("return 10 ** 4100", "assert add(2, 3) == 5"),
        ("return [5]", "import math\nassert math.isclose(add(2, 3), 5.0)"),
        ("return float('nan')", "import math\nassert math.isclose(add(2, 3), 5.0)"),
        ("return 10 ** 400", "assert add(2, 3) == 5.0"),
    ],
)
def test_a_value_that_breaks_the_comparison_fails(verifier, body, test):
    verdict = verifier.verify(f"def add(a, b):\n    {body}\n", test)
    assert verdict.status == "fail", verdict


# ---- 8. the pipe's deadline holds without namespaces ------------------------------------------

GRANDCHILD = (
    FORGE
    + """
import time
pid = os.fork()
if pid == 0:
    os.setsid()
    time.sleep(1.2)
    send(['int', '5'])
    time.sleep(30)
    os._exit(0)
print('grandchild', pid, flush=True)
os._exit(0)
"""
)
HOLDER = (
    FORGE
    + """
import subprocess
child = subprocess.Popen(['sleep', '30'], pass_fds=(fd,), start_new_session=True)
print('grandchild', child.pid, flush=True)
os._exit(0)
"""
)
LINGER = (
    FORGE
    + """
import time
if os.fork() == 0:
    os.setsid()
    time.sleep(30)
    os._exit(0)
def add(a, b):
    time.sleep(30)
"""
)


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@pytest.mark.parametrize("namespaced", [False, True], ids=["no namespaces", "namespaces"])
@pytest.mark.parametrize("program", [GRANDCHILD, HOLDER, LINGER], ids=["fork", "holder", "wait"])
def test_a_process_left_holding_the_pipe_cannot_pass_or_delay(monkeypatch, namespaced, program):
    if namespaced and not code_sandbox.namespaces_available():
        pytest.skip("this machine has no unprivileged namespaces")
    if not namespaced:
        monkeypatch.setattr(code_sandbox, "namespaces_available", lambda: False)
    checker = CodeVerifier(allow_code_execution=True, timeout=WALL, allow_subprocesses=True)
    cases = parse_tests(ADD)
    began = time.monotonic()
    result = run_calls(program, [c.call for c in cases], checker.limits)
    took = time.monotonic() - began
    assert judge(cases, result).status in ("fail", "timeout")
    assert within_limit(took)
    if program is not LINGER:
        assert took < 1.0 + STARTUP  # the child left at once; nobody waits for its leftovers
        pid = int(result.stdout.split("grandchild")[1].split()[0])
        if not namespaced:  # in a namespace the grandchild has a pid of its own namespace
            time.sleep(0.1)
            assert gone(pid)


# ---- 9. nothing of the package is readable from the sandbox ----------------------------------

READER = """
import glob, importlib.resources, json, os, sys
hidden = json.loads(sys.argv[1])['hidden']
found = []
def read(path):
    try:
        with open(path, 'rb') as file:
            found.append(path + ': ' + file.read(60).decode(errors='replace'))
    except OSError:
        pass
for root in hidden:
    for path in glob.glob(os.path.join(root, '**', '*.*'), recursive=True):
        read(path)
for root in sys.path:
    for pattern in ('games/data/*.jsonl', 'selfplay/games/data/*.jsonl', 'selfplay/*/*.py'):
        for path in glob.glob(os.path.join(root, pattern)):
            read(path)
try:
    bank = importlib.resources.files('selfplay.games').joinpath('data', 'code_tasks.jsonl')
    found.append('resources: ' + bank.read_text()[:60])
except Exception:
    pass
def f():
    return found
"""


def test_the_package_is_not_readable_from_the_sandbox_in_this_install():
    if not isolation()["landlock_abi"]:
        pytest.skip("this kernel has no Landlock: file access is not confined here")
    assert (code_sandbox.PACKAGE / "games" / "data" / "code_tasks.jsonl").exists()
    result = run_calls(READER, [Call("f")], Limits(wall_seconds=10, cpu_seconds=10))
    assert result.outcomes[0].kind == "ok", result
    assert result.outcomes[0].value == []


def test_the_package_is_not_readable_from_the_sandbox_in_a_wheel_install(tmp_path):
    if not isolation()["landlock_abi"]:
        pytest.skip("this kernel has no Landlock: file access is not confined here")
    source = tmp_path / "source"
    shutil.copytree(
        ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "runs")
    )
    pip = [sys.executable, "-m", "pip"]
    wheels = tmp_path / "wheels"
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w"]
    subprocess.run([*build, str(wheels), str(source)], check=True, capture_output=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [*pip, "--python", str(python), "install", "--no-deps", "--no-index", "-q"]
    subprocess.run([*install, *map(str, wheels.glob("*.whl"))], check=True, capture_output=True)
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    assert (site / "selfplay" / "games" / "data" / "code_tasks.jsonl").exists()
    (site / "neighbour.py").write_text("VALUE = 'next to the package'\n")  # must stay readable
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    script = textwrap.dedent(
        """
        import json, sys
        import selfplay
        from selfplay.verifiers.code_sandbox import Call, Limits, run_calls
        program = sys.stdin.read() + "\\nimport neighbour\\ndef g():\\n    return neighbour.VALUE"
        limits = Limits(wall_seconds=10, cpu_seconds=10)
        result = run_calls(program, [Call('f'), Call('g')], limits)
        outcomes = [[o.kind, o.value, o.detail] for o in result.outcomes]
        print(json.dumps([selfplay.__file__, outcomes]))
        """
    )
    done = subprocess.run(
        [str(python), "-c", script], input=READER, capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": ""}, cwd=tmp_path,
    )  # fmt: skip
    where, outcomes = json.loads(done.stdout)
    assert where.startswith(str(site)), where  # the parent runs the wheel's package
    assert outcomes == [["ok", [], ""], ["ok", "next to the package", ""]], outcomes


# ---- 10. a total disk cap per run, and clocks that tell on a program -------------------------

FILLER = """
def f():
    written = 0
    for k in range(40):
        try:
            with open(f'part{k}', 'wb') as file:
                file.write(b'0' * (8 << 20))
            written += 8 << 20
        except OSError:
            break
    return written
"""
FLOOD = """
import time
k = 0
while True:
    with open(f'part{k}', 'wb') as file:
        file.write(b'0' * (4 << 20))
    k += 1
"""


def test_all_files_of_a_run_together_are_capped():
    if not code_sandbox.namespaces_available():
        pytest.skip("this machine has no unprivileged namespaces")
    limits = Limits(wall_seconds=10, cpu_seconds=10, disk_mb=32)
    result = run_calls(FILLER, [Call("f")], limits)
    assert result.outcomes[0].kind == "ok", result
    assert result.outcomes[0].value <= 32 << 20


def test_without_namespaces_a_watch_stops_a_run_that_fills_the_disk(monkeypatch):
    monkeypatch.setattr(code_sandbox, "namespaces_available", lambda: False)
    limits = Limits(wall_seconds=10, cpu_seconds=10, disk_mb=32)
    began = time.monotonic()
    result = run_calls(FLOOD, [Call("f")], limits)
    assert time.monotonic() - began < 5
    assert result.outcomes[0].kind == "missing"
    assert "more than 32 MiB" in result.outcomes[0].detail


def test_a_fake_clock_moves_every_standard_clock():
    program = textwrap.dedent(
        """
        import datetime, time, timeit, email.utils
        def f():
            return [int(time.time()), time.time_ns() // 10**9, time.localtime().tm_year,
                    datetime.datetime.now().year, datetime.date.today().year,
                    time.gmtime().tm_year, int(time.clock_gettime(time.CLOCK_REALTIME)),
                    email.utils.formatdate()[12:16], int(timeit.default_timer()) > 10**8]
        """
    )
    start = 1_000_000_000.25  # 2001-09-09
    result = run_calls(program, [Call("f")], Limits(fake_clock=start))
    now, now_ns, *years, clock, stamped, timer = result.outcomes[0].value
    assert all(int(start) <= value <= start + 5 for value in (now, now_ns, clock))
    assert set(years) == {2001}
    assert stamped == "2001" and timer


CLOCKED = [
    "import calendar\nimport email.utils\ndef f(x):\n    return email.utils.formatdate()[17:19]",
    "import timeit\ndef f(x):\n    return int(timeit.default_timer()) % 2",
    "import _datetime\ndef f(x):\n    return _datetime.datetime.now().hour",
    "import sched\ndef f(x):\n    return int(sched.scheduler().timefunc()) % 3",
    "import email.utils\ndef f(x):\n    return email.utils.localtime().day",
    "import logging\ndef f(x):\n    return int(logging.makeLogRecord({}).created) % 5",
]


def _clocked_playout(program: str):
    from selfplay.games.proposers.code_proposer_solver import CodeProposerSolver
    from selfplay.testing import scripted_playout

    game = CodeProposerSolver(
        {"allow_code_execution": True, "timeout": 2.0, "kinds": ["deduction"]}
    )
    proposal = f"```python\n{program}\n```\n```input\n1\n```"
    roles = {"proposer": lambda *a: proposal}
    roles.update({f"solver_{k}": (lambda *a: "```output\n1\n```") for k in range(1, 5)})
    return scripted_playout(game, roles, 0).states[-1]


@pytest.mark.parametrize("program", CLOCKED, ids=range(len(CLOCKED)))
def test_a_proposer_whose_function_reads_the_clock_is_refused_at_its_import(program):
    final = _clocked_playout(program)
    assert final.program is None and "the program imports" in (final.error or ""), final


@pytest.mark.parametrize("program", CLOCKED, ids=range(len(CLOCKED)))
def test_a_clock_past_the_import_rule_is_not_deterministic(program, monkeypatch):
    """The determinism check holds on its own, should a clock module reach the whitelist."""
    from selfplay.games.proposers import code_tasks

    modules = {line.split()[1].split(".")[0] for line in program.splitlines() if "import" in line}
    monkeypatch.setattr(code_tasks, "PURE_MODULES", code_tasks.PURE_MODULES | modules)
    final = _clocked_playout(program)
    assert final.rejected is not None and "not deterministic" in final.rejected, final
