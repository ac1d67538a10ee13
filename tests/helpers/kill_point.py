"""SIGKILL the process at a chosen call, for the fault suite's kill-and-resume tests.

A target is ``PATH_SUFFIX:QUALNAME#N``: the N-th call of that function from the moment
`install` runs (``core/run/folder/checkpoint.py:_prune#1``); a C function is ``MODULE:NAME#N``
(``posix:replace#2``: the second ``os.replace``). sys.setprofile sees every call of the main
thread and slows the run down, so the `test-kill-point` callback installs it only at the end
of the iteration before, and it counts from the start of the iteration to kill in.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any


def parse(spec: str) -> tuple[str, str, int]:
    where, _, count = spec.rpartition("#")
    path, _, name = where.rpartition(":")
    return path, name, int(count)


def _matches(frame: Any, event: str, arg: Any, path: str, name: str) -> bool:
    if not path.endswith(".py"):  # a C function of the module ``path``
        named = getattr(arg, "__name__", None) == name
        return event == "c_call" and named and getattr(arg, "__module__", None) == path
    if event != "call":
        return False
    code = frame.f_code
    qualname = getattr(code, "co_qualname", code.co_name)
    return qualname == name and code.co_filename.replace(os.sep, "/").endswith(path)


#: The iteration's own call: calls are counted from it on, so a target in the checkpoint's
#: code is met in the iteration to kill in, not in the previous one's checkpoint (which runs
#: after the callbacks' on_iteration_end, where the profile is installed).
ITERATION = ("core/train/loop.py", "Iteration.__call__")


def install(spec: str) -> None:
    path, name, count = parse(spec)
    seen = [0]
    armed = [False]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if not armed[0]:
            armed[0] = _matches(frame, event, arg, *ITERATION)
            if not armed[0]:
                return
        if _matches(frame, event, arg, path, name):
            seen[0] += 1
            if seen[0] == count:
                os.kill(os.getpid(), signal.SIGKILL)

    sys.setprofile(profile)
