"""A wrong program must never be judged a pass, whatever it makes the sandbox say.

Every forger below defines a wrong ``add`` and then tries to report a pass another way:
writing "done" or a forged report to every descriptor, finding the results pipe through
argv, patching the harness, ``assert``, comparisons or ``math.isclose``, returning objects
whose ``__eq__`` says yes, leaving with exit status 0, printing markers. None may pass; the
same tricks around a *right* ``add`` must still pass or fail honestly (never error), which
shows the check can tell the two apart. Also here: expected values never reach the sandbox,
timeouts leave no zombie, a folder of many files does not delay the verdict, and program
text reaches verdicts and captured output without terminal escape codes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from selfplay.verifiers.code_sandbox import Call, Limits, run_calls, wait_for_cleanup
from selfplay.verifiers.code_tests import judge, parse_tests
from selfplay.verifiers.code_verifier import CodeVerifier

WALL = 2.0
TESTS = "assert add(1, 2) == 3\nassert add(10, 5) == 15\nassert add(-7, 7) == 0"
WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"
REPORT = (
    "import json\n"
    "def forged(value):\n"
    "    calls = [['ok', value]] * 3\n"
    "    return b'results ' + json.dumps({'calls': calls}).encode() + b'\\n'\n"
)

FORGERS = {
    "done to every fd, then os._exit(0)": (
        "import os\n"
        "for fd in range(3, 256):\n"
        "    try:\n        os.write(fd, b'done\\nready\\npass\\n')\n"
        "    except OSError:\n        pass\n"
        "os._exit(0)\n"
    ),
    "forged report to every fd": REPORT
    + (
        "import os\n"
        "for value in (['bool', True], ['str', 'pass'], ['int', '3']):\n"
        "    for fd in range(3, 256):\n"
        "        try:\n            os.write(fd, forged(value))\n"
        "        except OSError:\n            pass\n"
        "os._exit(0)\n"
    ),
    "results fd from argv": REPORT
    + (
        "import os, sys\n"
        "fd = json.loads(sys.argv[1])['results_fd']\n"
        "os.write(fd, b'ready\\ndone\\n' + forged(['bool', True]))\n"
        "os.close(fd)\n"
    ),
    "report written from a thread while the calls run": REPORT
    + (
        "import os, sys, threading\n"
        "fd = json.loads(sys.argv[1])['results_fd']\n"
        "def spam():\n"
        "    while True:\n        os.write(fd, forged(['bool', True]))\n"
        "threading.Thread(target=spam, daemon=True).start()\n"
    ),
    "harness outcome patched": (
        "import __main__\n__main__.outcome = lambda namespace, call: ['ok', ['bool', True]]\n"
    ),
    "harness encoder patched": "import __main__\n__main__.encode = lambda v, d=0: ['str', 'ok']\n",
    "json.dumps patched": (
        'import json\njson.dumps = lambda *a, **k: \'{"calls": [["ok", ["bool", true]]]}\'\n'
    ),
    "object equal to everything": (
        "class Yes:\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = object.__hash__\n"
        "def add(a, b):\n    return Yes()\n"
    ),
    "int subclass equal to everything": (
        "class Yes(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n"
        "def add(a, b):\n    return Yes(0)\n"
    ),
    "builtins and assert patched": (
        "import builtins, math, unittest\n"
        "builtins.AssertionError = type('Never', (Exception,), {})\n"
        "math.isclose = lambda *a, **k: True\n"
        "unittest.TestCase.assertEqual = lambda *a, **k: None\n"
    ),
    "isinstance patched": "import builtins\nbuiltins.isinstance = lambda *a: True\n",
    "os._exit(0) inside the call": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "SystemExit(0) inside the call": "def add(a, b):\n    raise SystemExit(0)\n",
    "SystemExit(0) at import": "raise SystemExit(0)\n",
    "sys.exit(0) from atexit": "import atexit, sys\natexit.register(lambda: sys.exit(0))\n",
    "kill itself with a clean status": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "printed markers": (
        "import sys\nprint('done')\nprint('ready\\nresults {\"calls\": []}')\n"
        "sys.stderr.write('PASS\\nall 3 tests passed\\n')\n"
    ),
    "report closed early": (
        "import json, os, sys\nos.close(json.loads(sys.argv[1])['results_fd'])\n"
    ),
}


@pytest.fixture(scope="module")
def verifier():
    return CodeVerifier(allow_code_execution=True, timeout=WALL)


@pytest.mark.parametrize("trick", sorted(FORGERS))
def test_a_wrong_program_never_reports_its_own_pass(verifier, trick):
    forged = verifier.verify(WRONG + FORGERS[trick], TESTS)
    assert forged.status in ("fail", "timeout"), (trick, forged)


def test_the_forgery_checks_can_fail(verifier):
    # the tricks that leave add alone, around a right add, still pass: a verifier that
    # failed everything would not satisfy the test above by accident
    for trick in ("builtins and assert patched", "printed markers"):
        assert verifier.verify(RIGHT + FORGERS[trick], TESTS).status == "pass", trick
    assert verifier.verify(RIGHT, TESTS).status == "pass"


def test_expected_values_never_enter_the_sandbox(verifier):
    secret = 982_451_653
    snoop = (
        "import glob, os, sys\n"
        "def add(a, b):\n"
        "    places = [' '.join(sys.argv), str(dict(os.environ))]\n"
        "    for path in glob.glob('**', recursive=True) + ['/proc/self/cmdline']:\n"
        "        try:\n            places.append(open(path, errors='replace').read())\n"
        "        except OSError:\n            pass\n"
        "    for path in ('/proc/%d/cmdline', '/proc/%d/environ', '/proc/%d/mem'):\n"
        "        try:\n"
        "            places.append(open(path % os.getppid(), errors='replace').read())\n"
        "        except OSError:\n            pass\n"
        "    needle = str(7 * 140350236 + 1)  # the secret, never spelt out in this file\n"
        "    return int(needle) if any(needle in p for p in places) else -1\n"
    )
    verdict = verifier.verify(snoop, f"assert add(1, 2) == {secret}")
    assert verdict.status == "fail", verdict
    honest = verifier.verify(
        f"def add(a, b):\n    return {secret}", f"assert add(1, 2) == {secret}"
    )
    assert honest.status == "pass"


def test_tests_the_parent_cannot_check_are_an_error_not_a_fail(verifier):
    for tests in ("for i in range(3):\n    assert add(i, 0) == i", "assert add(add(1, 1), 1) == 3"):
        verdict = verifier.verify(RIGHT, tests)
        assert verdict.status == "error" and "cannot be checked" in verdict.detail


def test_the_accepted_test_forms_are_judged_by_the_parent(verifier):
    program = "import math\ndef area(r):\n    return math.pi * r * r\ndef none():\n    return None"
    tests = (
        "import math\nassert math.isclose(area(1), 3.14159265, rel_tol=1e-6)\n"
        "assert none() is None\nassert area(1)\nassert not area(0)\nassert 0 == area(0)"
    )
    assert verifier.verify(program, tests).status == "pass"
    assert verifier.verify(program, "assert math.isclose(area(1), 3.2)").status == "fail"


def zombies() -> set[str]:
    """Zombie processes handed to init: what an unreaped namespace init becomes."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and fields[1] == "1":
            found.add(pid)
    return found


def test_timeouts_leave_no_zombie():
    before = zombies()
    limits = Limits(wall_seconds=0.3, cpu_seconds=5)
    for _ in range(3):
        assert run_calls("while True:\n    pass", [Call("f")], limits).status == "timeout"
    time.sleep(0.2)
    assert zombies() - before == set()


def test_many_files_do_not_delay_the_verdict():
    flood = (  # hard links are the cheapest way to make many directory entries
        "import os\ni = 0\nwhile True:\n"
        "    if i % 60000 == 0:\n        open(f'base{i}', 'w').close()\n        base = f'base{i}'\n"
        "    os.link(base, f'l{i}')\n    i += 1\n"
    )
    limits = Limits(wall_seconds=3.0, cpu_seconds=10)
    began = time.monotonic()
    result = run_calls(flood, [Call("f")], limits)  # the disk cap may stop it before the clock
    assert result.status == "timeout" or result.outcomes[0].kind != "ok"
    assert time.monotonic() - began < limits.wall_seconds + 1.0
    assert wait_for_cleanup()


def test_program_text_reaches_verdicts_and_output_without_escape_codes(verifier):
    noisy = (
        "import sys\nprint('\\x1b]0;owned\\x07\\x1b[2J\\u202e')\n"
        "sys.stderr.write('\\x1b[31mred\\x9b')\n"
        "def add(a, b):\n    raise type('\\x1b[2J', (Exception,), {})('\\x1b[1A\\x1b[K')\n"
    )
    result = run_calls(noisy, [Call("add", (1, 2))])
    verdict = judge(parse_tests("assert add(1, 2) == 3"), result)
    shown = result.stdout + result.stderr + verdict.detail
    assert verdict.status == "fail"
    assert not any(char in shown for char in "\x1b\x07\x9b\u202e"), shown
    assert "\\x1b" in shown  # escaped, so the evidence is still readable
