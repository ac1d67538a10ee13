"""benchmarks/speed_ledger.py without the benchmarks: its arguments, its arithmetic, its
alternation, and its worktrees (made importable as ``selfplay``, and always removed)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "speed_ledger.py"
spec = importlib.util.spec_from_file_location("speed_ledger", PATH)
ledger = importlib.util.module_from_spec(spec)
sys.modules["speed_ledger"] = ledger  # dataclasses look their module up there
spec.loader.exec_module(ledger)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository whose root is a package, at two commits that tell themselves apart."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "--quiet")
    (root / "__init__.py").write_text("MARK = 'old'\n")
    git(root, "add", ".")
    git(root, "commit", "--quiet", "-m", "old")
    old = git(root, "rev-parse", "HEAD")
    (root / "__init__.py").write_text("MARK = 'new'\n")
    git(root, "commit", "--quiet", "-am", "new")
    return root, git(root, "rev-parse", "HEAD"), old


def worktrees(root: Path) -> list[str]:
    return [line for line in git(root, "worktree", "list").splitlines() if line]


# ---- arguments -----------------------------------------------------------------------------


def test_against_is_required_and_bad_numbers_are_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        ledger.parse([])
    for bad, said in ((["--rounds", "0"], "--rounds 0"), (["--threshold", "3"], "--threshold 3")):
        with pytest.raises(SystemExit) as stop:
            ledger.parse(["--against", "abc", *bad])
        assert stop.value.code == 2
        assert said in capsys.readouterr().err
    args = ledger.parse(["--against", "abc"])
    assert (args.head, args.rounds, args.threads, args.threshold) == ("HEAD", 2, 2, 0.03)


def test_a_commit_that_is_not_there_is_named(repo):
    root, _, _ = repo
    with pytest.raises(ledger.LedgerError, match="'nosuchthing' is not a commit"):
        ledger.resolve(root, "nosuchthing")


def test_main_refuses_an_unknown_commit_with_status_2_and_makes_no_worktree(
    repo, monkeypatch, capsys
):
    root, _, _ = repo
    monkeypatch.setattr(ledger, "ROOT", root)
    assert ledger.main(["--against", "no-such-commit-anywhere"]) == 2
    assert "'no-such-commit-anywhere' is not a commit" in capsys.readouterr().err
    assert len(worktrees(root)) == 1


def test_main_refuses_the_commit_measured_against_itself(capsys):
    assert ledger.main(["--against", "HEAD"]) == 2
    assert "names the commit measured" in capsys.readouterr().err


# ---- the arithmetic ------------------------------------------------------------------------


def test_rounds_alternate_which_commit_runs_first():
    assert ledger.schedule(("HEAD", "abc"), 3) == [
        (1, "HEAD"), (1, "abc"), (2, "abc"), (2, "HEAD"), (3, "HEAD"), (3, "abc"),
    ]  # fmt: skip


def test_medians_and_speed_per_measure():
    rows = ledger.compare({"race": [10.0, 12.0, 11.0]}, {"race": [11.0, 11.0, 13.2]})
    (row,) = rows
    assert (row.head, row.against) == (11.0, 11.0)
    assert row.speed == pytest.approx(1.0)
    assert row.rounds == pytest.approx((1.1, 11 / 12, 1.2))
    assert not row.slower and not row.moved


@pytest.mark.parametrize(
    ("head", "slower", "moved"),
    [(10.29, False, False), (10.31, True, True), (9.72, False, False), (9.70, False, True)],
)
def test_the_threshold_is_three_percent_of_the_commits_time(head, slower, moved):
    (row,) = ledger.compare({"iteration": [head]}, {"iteration": [10.0]})
    assert (row.slower, row.moved) == (slower, moved)


def test_only_a_gated_measure_fails_the_ledger():
    slow_part = ledger.compare(
        {"race": [10.0], "race_update": [9.0]}, {"race": [10.0], "race_update": [5.0]}
    )
    assert ledger.verdict(slow_part, "abc", 0.03)[0] == 0
    slow_run = ledger.compare({"run": [20.0]}, {"run": [19.0]})
    status, line = ledger.verdict(slow_run, "abc", 0.03)
    assert status == 1 and "run 0.950x" in line and "more than 3% slower" in line
    fast = ledger.compare({"race": [9.0]}, {"race": [10.0]})
    status, line = ledger.verdict(fast, "abc", 0.03)
    assert status == 0 and "faster" in line and "record it" in line


# ---- worktrees -----------------------------------------------------------------------------


def test_each_worktree_is_imported_as_selfplay_ahead_of_the_installed_copy(repo, tmp_path):
    root, new, old = repo
    where = tmp_path / "where"
    where.mkdir()
    with ledger.checkouts(root, {"HEAD": new, "old": old}, where) as made:
        marks = []
        for checkout in made:
            env = ledger.environment(checkout, threads=1)
            ledger.check_import(checkout, env)  # the worktree's, not this project's install
            code = "import selfplay; print(selfplay.MARK)"
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)
            marks.append(out.stdout.decode().strip())
        assert marks == ["new", "old"]
        assert len(worktrees(root)) == 3
    assert len(worktrees(root)) == 1
    assert not any(where.glob("tree-*"))


def test_the_worktrees_go_even_when_the_measuring_fails(repo, tmp_path):
    root, new, old = repo
    with (
        pytest.raises(ledger.LedgerError, match="the race"),
        ledger.checkouts(root, {"HEAD": new, "old": old}, tmp_path) as made,
    ):
        assert all(checkout.folder.is_dir() for checkout in made)
        raise ledger.LedgerError("the race failed")
    assert len(made) == 2
    assert len(worktrees(root)) == 1
    assert not any(checkout.folder.exists() for checkout in made)


def test_an_import_from_elsewhere_is_caught(repo, tmp_path):
    root, new, old = repo
    with ledger.checkouts(root, {"HEAD": new, "old": old}, tmp_path) as made:
        wrong = ledger.Checkout("HEAD", new, made[1].folder, made[0].path)
        with pytest.raises(ledger.LedgerError, match="not the worktree"):
            ledger.check_import(wrong, ledger.environment(made[0], threads=1))


def test_main_prints_the_table_and_fails_when_head_is_slower(repo, monkeypatch, capsys):
    """The whole command with the two measuring children replaced by fixed figures."""
    root, _, old = repo
    monkeypatch.setattr(ledger, "ROOT", root)
    monkeypatch.setattr(ledger, "build_race_model", lambda *a: None)
    monkeypatch.setattr(ledger, "check_import", lambda *a: None)

    def race(harness, model, threads, env):
        slow = env["PYTHONPATH"].split(os.pathsep)[0].endswith("path-0")  # HEAD is tree 0
        race = {"race": 10.5 if slow else 10.0, "race_generation": 4.0, "race_update": 6.0}
        return race | {"race_cpu": 20.0}

    def run(out, threads, env):
        iteration = {"iteration": 2.0, "iteration_rollout": 1.0, "iteration_update": 1.0}
        return iteration | {"run": 30.0, "run_cpu": 60.0}

    monkeypatch.setattr(ledger, "race_once", race)
    monkeypatch.setattr(ledger, "run_once", run)
    assert ledger.main(["--against", old[:7]]) == 1
    out = capsys.readouterr().out
    assert "race 0.952x" in out and "<- slower" in out
    rounds = [line.split()[:2] for line in out.splitlines() if line[:5].strip().isdigit()]
    assert rounds == [["1", "HEAD"], ["1", old[:7]], ["2", old[:7]], ["2", "HEAD"]]
    assert len(worktrees(root)) == 1


def test_the_race_side_is_read_from_its_result_line(tmp_path):
    harness = tmp_path / "peer_trl.py"
    line = '{"seconds": 12.5, "generation_seconds": 4.5, "update_seconds": 7.0}'
    harness.write_text(f"print('30 steps...')\nprint('RESULT {line}')\n")
    got = ledger.race_once(harness, tmp_path, threads=1, env=dict(os.environ))
    assert (got["race"], got["race_generation"], got["race_update"]) == (12.5, 4.5, 7.0)
    assert got["race_cpu"] >= 0
    harness.write_text("print('no result here')\n")
    with pytest.raises(ledger.LedgerError, match="printed no RESULT line"):
        ledger.race_once(harness, tmp_path, threads=1, env=dict(os.environ))
    harness.write_text("import sys; sys.exit('the harness broke')\n")
    with pytest.raises(ledger.LedgerError, match=r"failed \(exit 1\):\n.*the harness broke"):
        ledger.race_once(harness, tmp_path, threads=1, env=dict(os.environ))
