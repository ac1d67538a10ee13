"""The code verifier and its sandbox against hostile programs.

Every hostile program is followed by tests that call ``solution``, which none of them defines
properly, so each must end as fail or timeout. Afterwards no file may exist outside the
sandbox, no secret may have been seen, no process or temporary folder may be left over.
Programs that try to report their own pass are in tests/test_verifiers_code_forgery.py.
"""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from selfplay.verifiers.code_sandbox import isolation, run_calls, wait_for_cleanup
from selfplay.verifiers.code_tests import judge, parse_tests
from selfplay.verifiers.code_verifier import CodeExecutionDisabled, CodeVerifier

WALL = 1.5
SECRET = "sk-test-do-not-leak-7f3a"
TESTS = "assert solution(2) == 4"
OUT = "OUTSIDE"  # replaced by a path outside the sandbox

HOSTILE = [
    "while True: pass",
    "import time\nwhile True: time.sleep(0.01)",
    "x = bytearray(8 * 1024**3)",
    "x = []\nwhile True: x.append(' ' * 10**6)",
    "import sys\nsys.setrecursionlimit(10**6)\ndef f(n): return f(n + 1)\nf(0)",
    "def f(n): return f(n + 1)\nf(0)",
    "open('OUTSIDE/a', 'w').write('x')",
    "import os\nos.mkdir('OUTSIDE/d')",
    "import shutil\nshutil.copy('/etc/hostname', 'OUTSIDE/b')",
    "import pathlib\npathlib.Path('OUTSIDE/c').write_text('x')",
    "import os\nos.symlink('/etc', 'link')\nopen('link/../OUTSIDE_rel', 'w')",
    "import os\nos.rename('program.py', 'OUTSIDE/moved.py')",
    "open('/tmp/selfplay-escape-marker', 'w').write('x')",
    "import os\nprint(os.environ)\nopen('OUTSIDE/env', 'w').write(str(dict(os.environ)))",
    "import os\nprint(os.environ.get('SELFPLAY_TEST_SECRET'))",
    "print(open(f'/proc/{__import__(\"os\").getppid()}/environ').read())",
    "import os\nfor p in os.listdir('/proc'):\n    print(open(f'/proc/{p}/environ').read())",
    "print(open('/proc/self/environ').read())",
    "print(open('/proc/1/environ').read())",
    "import glob\nprint([open(p).read() for p in glob.glob('/proc/*/environ')])",
    "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)",
    "import socket\ns = socket.socket()\ns.bind(('0.0.0.0', 8765))\ns.listen()",
    "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "s.sendto(b'x', ('8.8.8.8', 53))",
    "import urllib.request\nurllib.request.urlopen('http://example.com', timeout=1)",
    "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
    "import os, signal\nos.killpg(os.getpgid(0), signal.SIGKILL)",
    "import os, signal\nos.kill(0, signal.SIGTERM)",
    "import os\nos._exit(0)",
    "import sys\nsys.exit(0)",
    "raise SystemExit(0)",
    "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nsignal.alarm(1)\n"
    "while True: pass",
    "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
    "    signal.signal(s, signal.SIG_IGN)\nwhile True: pass",
    "import threading, time\n"
    "def spin():\n    while True: time.sleep(0.01)\n"
    "for _ in range(8): threading.Thread(target=spin).start()",
    "import threading\nthreading.Thread(target=lambda: [0 for _ in iter(int, 1)]).start()",
    "import os\nos.fork()",
    "import os\nwhile True: os.fork()",
    "import subprocess\nsubprocess.run(['sleep', '100'])",
    "import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 100 &'], start_new_session=True)",
    "import os\nif os.fork() == 0:\n    os.setsid()\n    import time; time.sleep(100)",
    "import multiprocessing\nmultiprocessing.Process(target=print).start()",
    "import os\nos.execv('/bin/sh', ['sh', '-c', 'touch OUTSIDE/exec'])",
    "import ctypes\nctypes.CDLL(None).fork()",
    "import ctypes\nctypes.string_at(0)",
    "import ctypes, os\nctypes.CDLL(None).syscall(62, os.getppid(), 9)",
    "import ctypes, os\nctypes.CDLL(None).kill(os.getppid(), 9)",
    "import sys\nwhile True: sys.stdout.write('x' * 65536)",
    "import sys\nwhile True: sys.stderr.write('y' * 65536)",
    "open('big', 'wb').write(b'0' * 10**9)",
    "fs = [open(f'f{i}', 'w') for i in range(100000)]",
    "import os\nos.chmod('.', 0)",
    "import os\nos.setsid()",
    "import os\nos.setuid(0)\nopen('OUTSIDE/root', 'w')",
    "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (10**6, 10**6))\nwhile True: pass",
    "import selfplay",
    "exec(open('OUTSIDE/../../etc/passwd').read())",
    "solution = lambda x: (_ for _ in ()).throw(KeyboardInterrupt)",
    "import gc\nwhile True: gc.collect(); [[] for _ in range(10**6)]",
    "import time\ntime.sleep(100)",
]


def sandbox_processes() -> list[str]:
    """Processes that are still running sandboxed code (by their command line)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"sandbox/child.py" in cmdline:
            found.append(pid)
    return found


def my_children() -> list[str]:
    me, found = str(os.getpid()), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me:
            found.append(pid)
    return found


def sandbox_folders() -> set[str]:
    """Run folders, and run folders renamed away for deletion, in the temporary folder."""
    temporary = Path(tempfile.gettempdir())
    return {
        p.name
        for pattern in ("selfplay-sandbox-*", "selfplay-trash-*")
        for p in temporary.glob(pattern)
    }


@pytest.fixture()
def verifier():
    return CodeVerifier(allow_code_execution=True, timeout=WALL)


def test_code_execution_is_off_unless_switched_on():
    with pytest.raises(CodeExecutionDisabled, match="allow_code_execution=True"):
        CodeVerifier()


def test_correct_program_passes_and_wrong_one_fails(verifier):
    assert verifier.verify("def solution(x):\n    return x * x", TESTS).status == "pass"
    assert verifier.verify("def solution(x):\n    return x + 3", TESTS).status == "fail"
    fenced = "Here:\n```python\ndef solution(x):\n    return 2 * x\n```\nDone."
    assert verifier.verify(fenced, TESTS).status == "pass"


def test_missing_interpreter_is_an_error_never_a_fail():
    broken = CodeVerifier(allow_code_execution=True, timeout=WALL, python="/nonexistent/python")
    verdict = broken.verify("def solution(x):\n    return x * x", TESTS)
    assert verdict.status == "error" and verdict.score is None


def test_threads_still_work(verifier):
    program = (
        "import threading\nresult = []\n"
        "t = threading.Thread(target=lambda: result.append(4))\nt.start(); t.join()\n"
        "def solution(x):\n    return result[0]"
    )
    assert verifier.verify(program, TESTS).status == "pass"


def test_this_machine_isolates_files_and_network():
    # the escape checks below rely on these; where a kernel lacks them the docs say so
    protections = isolation()
    if not protections["landlock_abi"]:
        pytest.skip("this kernel has no Landlock: file access is not confined here")
    assert protections["seccomp"]


def test_hostile_programs_never_escape(verifier, tmp_path, monkeypatch):
    if not isolation()["landlock_abi"]:
        pytest.skip("this kernel has no Landlock: file access is not confined here")
    monkeypatch.setenv("SELFPLAY_TEST_SECRET", SECRET)
    outside = tmp_path / "outside"
    outside.mkdir()
    folders_before = sandbox_folders()
    programs = [program.replace(OUT, str(outside)) for program in HOSTILE]

    cases = parse_tests(TESTS)

    def run(program: str):
        began = time.monotonic()
        result = run_calls(program, [case.call for case in cases], verifier.limits)
        return program, result, time.monotonic() - began

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(run, programs))
    assert len(outcomes) >= 50
    problems = []
    for program, result, seconds in outcomes:
        verdict = judge(cases, result)
        if verdict.status not in ("fail", "timeout"):
            problems.append((program, verdict))
        if seconds >= WALL + 2.0:
            problems.append((program, f"took {seconds:.1f} s"))
        if SECRET in result.stdout + result.stderr:
            problems.append((program, "saw the secret"))
    assert problems == []
    assert list(outside.iterdir()) == []
    assert not Path("/tmp/selfplay-escape-marker").exists()
    assert sandbox_processes() == []
    assert wait_for_cleanup()
    assert sandbox_folders() <= folders_before


def test_no_process_or_folder_is_left_behind(verifier):
    folders_before = sandbox_folders()
    children_before = set(my_children())  # e.g. another test's long-lived math worker
    verifier.verify(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()", TESTS
    )
    assert sandbox_processes() == []
    assert set(my_children()) <= children_before
    assert wait_for_cleanup()
    assert sandbox_folders() <= folders_before


@pytest.mark.skipif(os.geteuid() == 0, reason="the kernel does not enforce RLIMIT_NPROC for root")
def test_fork_bomb_with_subprocesses_allowed_is_contained():
    # last on purpose: with subprocesses allowed only RLIMIT_NPROC and the group kill hold it
    bomb = CodeVerifier(allow_code_execution=True, timeout=WALL, allow_subprocesses=True)
    began = time.monotonic()
    verdict = bomb.verify("import os\nwhile True:\n    os.fork()", TESTS)
    assert verdict.status in ("fail", "timeout")
    assert time.monotonic() - began < WALL + 2.0
    time.sleep(0.2)
    assert sandbox_processes() == []
