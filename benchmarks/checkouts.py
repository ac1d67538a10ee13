"""Commits side by side: each checked out in a git worktree of its own, imported from there as
``selfplay``, and the measuring children run under it with what each cost.

The repository root is the ``selfplay`` package, so a temporary folder holds a ``selfplay``
link to the worktree and goes first on PYTHONPATH, ahead of any installed copy
(`check_import` says which one a child imported). Every worktree is removed on the way out,
also after an error or Ctrl-C. A child's peak resident memory is the kernel's count for it
and the children it waited for (``wait4``), read from outside: it does not move with the
machine's load, as its wall clock does. The kernel also counts the image a child was started
from (the launching process's resident set at the fork), so the process that launches the
measured children stays small: the ledger imports nothing large. benchmarks/speed_ledger.py
and benchmarks/pretrained_iteration.py compare commits with these.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path


class LedgerError(Exception):
    """A commit, a worktree or a measuring child that failed; the message says which."""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode:
        raise LedgerError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def resolve(repo: Path, name: str) -> str:
    """The full hash of commit ``name``, or a `LedgerError` naming it."""
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
    except LedgerError:
        raise LedgerError(
            f"{name!r} is not a commit of {repo.name}; name one `git log --oneline` shows."
        ) from None


@dataclass(frozen=True)
class Checkout:
    label: str  # "HEAD" or the commit as given
    commit: str
    folder: Path  # the worktree
    path: Path  # the PYTHONPATH entry: a folder with a ``selfplay`` link to the worktree


@contextmanager
def checkouts(repo: Path, commits: dict[str, str], where: Path) -> Iterator[list[Checkout]]:
    """A detached worktree per commit under ``where``, each importable as ``selfplay``;
    every worktree is removed on the way out, whatever happened inside."""
    made: list[Checkout] = []
    try:
        for k, (label, commit) in enumerate(commits.items()):
            folder, path = where / f"tree-{k}", where / f"path-{k}"
            git(repo, "worktree", "add", "--detach", "--quiet", str(folder), commit)
            made.append(Checkout(label, commit, folder, path))
            path.mkdir()
            (path / "selfplay").symlink_to(folder, target_is_directory=True)
        yield made
    finally:
        for checkout in made:
            with suppress(LedgerError):  # already gone: prune below forgets it
                git(repo, "worktree", "remove", "--force", str(checkout.folder))
        git(repo, "worktree", "prune")


def environment(checkout: Checkout, threads: int) -> dict[str, str]:
    rest = os.environ.get("PYTHONPATH")
    path = str(checkout.path) + (os.pathsep + rest if rest else "")
    return {
        **os.environ,
        "PYTHONPATH": path,
        "OMP_NUM_THREADS": str(threads),
        "SELFPLAY_PLOTS": "0",
    }


@dataclass(frozen=True)
class Finished:
    """A child that exited 0: what it printed, its peak resident set and its CPU time."""

    out: str
    peak_mb: float  # the largest resident set of it and of the children it waited for
    cpu: float  # seconds, user and system


def child(command: list[str], env: dict[str, str], what: str, cwd: Path | None = None) -> Finished:
    """Run a measuring child; what it printed and cost, or a `LedgerError` with the tail of
    its stderr."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True, env=env, cwd=cwd)
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:  # Ctrl-C: the child goes too
            process.kill()
            process.wait()
            raise
        process.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here
        out.seek(0)
        err.seek(0)
        if code:
            raise LedgerError(f"{what} failed (exit {code}):\n{err.read()[-3000:]}")
        return Finished(out.read(), usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime)


def check_import(checkout: Checkout, env: dict[str, str]) -> None:
    """That ``import selfplay`` under ``env`` is the worktree's, not an installed copy."""
    code = "import selfplay; print(selfplay.__file__)"
    out = child([sys.executable, "-c", code], env, "import").out
    found = Path(out.strip()).resolve().parent
    if found != checkout.folder.resolve():
        raise LedgerError(
            f"{checkout.label}: `import selfplay` found {found}, not the worktree "
            f"{checkout.folder}; unset whatever puts another copy ahead on sys.path."
        )
