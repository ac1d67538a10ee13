"""The race's update in CPU time of the main thread at one thread, for two checkouts in turn.

`benchmarks/peer_trl.py`'s `ours` side (32 prompts x 8 completions of one-digit addition) for
``--steps`` steps, `Updater.update` and every backward pass wrapped in `time.thread_time`:
what the update costs whatever else runs on the machine (one thread does its work on the
thread that calls it). With ``--against COMMIT`` the same runs alternate with COMMIT's code,
checked out in a worktree of its own (removed at the end):

    python benchmarks/update_cpu.py --against 001e4a7 --rounds 3 [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(steps: int) -> dict[str, float]:
    """In this process: the update's and the backward passes' CPU ms a step."""
    sys.path.insert(0, str(HERE))
    import peer_trl  # the race's task and model, from beside this file
    import torch

    from selfplay.core.train.update import updater as update

    spent = {"update": 0.0, "backward": 0.0}

    def timed(owner: object, name: str, key: str) -> None:
        function = getattr(owner, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            start = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[key] += time.thread_time() - start

        setattr(owner, name, wrapper)

    timed(update.Updater, "update", "update")
    timed(torch.Tensor, "backward", "backward")
    folder = Path(tempfile.mkdtemp(prefix="update-cpu-"))
    peer_trl.build_model(folder, 0)
    run = argparse.Namespace(
        side="ours", model=folder, steps=steps, threads=1, precision="32-true", seed=0
    )
    peer_trl.run_ours(run)
    return {key: 1000 * value / steps for key, value in spent.items()}


def one(code: Path | None, steps: int) -> dict[str, float]:
    """`measure` in a child process importing selfplay from ``code`` (None: this checkout)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SELFPLAY_PLOTS": "0"}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    command = [sys.executable, __file__, "--child", "--steps", str(steps)]
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir()
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode or not lines:
        raise SystemExit(f"a measurement failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def checkout(commit: str, into: Path) -> Path:
    """COMMIT's tree as an importable ``selfplay`` package under ``into``."""
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    found = subprocess.run(["git", "rev-parse", "--verify", f"{commit}^{{commit}}"], cwd=top,
                           capture_output=True, text=True)  # fmt: skip
    if found.returncode:
        print(f"update_cpu.py: --against {commit} is not a commit of this repository; give a "
              "commit id, a branch or a tag (git log --oneline)", file=sys.stderr)  # fmt: skip
        raise SystemExit(2)
    tree = into / "selfplay"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=top, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", help="a commit to alternate with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(measure(args.steps)))
        return
    with tempfile.TemporaryDirectory(prefix="update-cpu-code-") as folder:
        sides = {"HEAD": None}  # HEAD: the selfplay this Python imports
        if args.against:
            sides[args.against] = checkout(args.against, Path(folder))
        print(f"{'round':>5} {'code':<10}{'update ms':>10}{'backward ms':>12}  (a step, CPU)")
        for r in range(args.rounds):
            for name, code in sides.items():
                got = one(code, args.steps)
                print(f"{r + 1:>5} {name:<10}{got['update']:>10.1f}{got['backward']:>12.1f}")


if __name__ == "__main__":
    main()
