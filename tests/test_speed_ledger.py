"""benchmarks/speed_ledger.py without the benchmarks: its arguments, its arithmetic (seconds
and peak memory), its alternation, its children's peaks, and its worktrees (made importable as
``selfplay``, and always removed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from project_scripts import load_script

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "speed_ledger.py"
ledger = load_script("benchmarks/speed_ledger.py")

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
    bad_ones = (
        (["--rounds", "0"], "--rounds 0"),
        (["--threshold", "3"], "--threshold 3"),
        (["--memory-threshold", "5"], "--memory-threshold 5"),
    )
    for bad, said in bad_ones:
        with pytest.raises(SystemExit) as stop:
            ledger.parse(["--against", "abc", *bad])
        assert stop.value.code == 2
        assert said in capsys.readouterr().err
    args = ledger.parse(["--against", "abc"])
    assert (args.head, args.rounds, args.threads, args.threshold) == ("HEAD", 2, 2, 0.03)
    assert args.memory_threshold == 0.05


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
    assert row.ratio == pytest.approx(1.0)
    assert row.rounds == pytest.approx((1.1, 11 / 12, 1.2))
    assert not row.worse and not row.moved


@pytest.mark.parametrize(
    ("head", "slower", "moved"),
    [(10.29, False, False), (10.31, True, True), (9.72, False, False), (9.70, False, True)],
)
def test_the_threshold_is_three_percent_of_the_commits_time(head, slower, moved):
    (row,) = ledger.compare({"iteration": [head]}, {"iteration": [10.0]})
    assert (row.worse, row.moved) == (slower, moved)


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


@pytest.mark.parametrize(
    ("head", "worse", "moved"),
    [(1049.0, False, False), (1051.0, True, True), (955.0, False, False), (950.0, False, True)],
)
def test_a_peak_is_held_to_five_percent_of_the_commits(head, worse, moved):
    (row,) = ledger.compare({"run_peak": [head]}, {"run_peak": [1000.0]})
    assert (row.worse, row.moved) == (worse, moved)
    status, line = ledger.verdict([row], "abc", 0.03)
    assert status == int(worse)
    if worse:
        assert "peak memory is more than 5% above abc's: run_peak 1051 MB against 1000" in line
    elif moved:
        assert "more than 5% below" in line


def test_a_rise_in_memory_fails_the_ledger_however_fast_head_is():
    rows = ledger.compare(
        {"race": [9.0], "race_peak": [700.0], "run": [20.0], "run_peak": [1644.0]},
        {"race": [10.0], "race_peak": [690.0], "run": [20.0], "run_peak": [959.0]},
    )
    status, text = ledger.verdict(rows, "001e4a7", 0.03)
    seconds, memory = text.splitlines()
    assert status == 1 and "faster" in seconds
    assert "run_peak 1644 MB against 959 MB (+71.4%)" in memory and "race_peak" not in memory
    # a 4% rise in memory is within its 5%, though over the 3% of the seconds
    peaks = {"race_peak": [1040.0]}, {"race_peak": [1000.0]}
    assert ledger.verdict(ledger.compare(*peaks), "abc", 0.03)[0] == 0
    tighter = ledger.compare(*peaks, memory_threshold=0.02)
    assert ledger.verdict(tighter, "abc", 0.03, memory_threshold=0.02)[0] == 1


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

    fake_children(monkeypatch, race_seconds=(10.5, 10.0), run_peaks=(500.0, 500.0))
    assert ledger.main(["--against", old[:7]]) == 1
    out = capsys.readouterr().out
    assert "race 0.952x" in out and "<- slower" in out
    assert "peak memory is within 5%" in out
    rounds = [line.split()[:2] for line in out.splitlines() if line[:5].strip().isdigit()]
    assert rounds == [["1", "HEAD"], ["1", old[:7]], ["2", old[:7]], ["2", "HEAD"]]
    assert len(worktrees(root)) == 1


def test_main_fails_when_heads_peak_rises_though_its_seconds_do_not(repo, monkeypatch, capsys):
    root, _, old = repo
    monkeypatch.setattr(ledger, "ROOT", root)
    fake_children(monkeypatch, race_seconds=(10.0, 10.0), run_peaks=(1644.0, 959.0))
    assert ledger.main(["--against", old[:7]]) == 1
    out = capsys.readouterr().out
    assert "<- more memory" in out and "<- slower" not in out
    assert f"HEAD's peak memory is more than 5% above {old[:7]}'s: run_peak 1644 MB" in out
    assert "HEAD is within 3%" in out
    assert len(worktrees(root)) == 1


def fake_children(monkeypatch, race_seconds, run_peaks) -> None:
    """The race and the run replaced by fixed figures, (HEAD's, the commit's) each."""
    monkeypatch.setattr(ledger, "build_race_model", lambda *a: None)
    monkeypatch.setattr(ledger, "check_import", lambda *a: None)

    def side(env) -> int:
        return 0 if env["PYTHONPATH"].split(os.pathsep)[0].endswith("path-0") else 1  # HEAD: 0

    def race(harness, model, threads, env):
        race = {"race": race_seconds[side(env)], "race_generation": 4.0, "race_update": 6.0}
        return race | {"race_cpu": 20.0, "race_peak": 400.0}

    def run(out, threads, env):
        iteration = {"iteration": 2.0, "iteration_rollout": 1.0, "iteration_update": 1.0}
        return iteration | {"run": 30.0, "run_cpu": 60.0, "run_peak": run_peaks[side(env)]}

    monkeypatch.setattr(ledger, "race_once", race)
    monkeypatch.setattr(ledger, "run_once", run)


def test_a_childs_peak_memory_is_its_own_read_from_outside():
    """Measured from a small process, as the ledger is one: a child's peak counts the image it
    was started from, so pytest's own would hide a small child's."""
    code = f"""
import os, sys
sys.path.insert(0, {str(PATH.parent)!r})
from checkouts import child
big = "block = bytes(range(256)) * (300 << 12); print(len(block) >> 20)"  # 300 MB, touched
done = child([sys.executable, "-c", big], dict(os.environ), "the big child")
small = child([sys.executable, "-c", "pass"], dict(os.environ), "the small child")
print(done.out.strip(), round(done.peak_mb), round(small.peak_mb), done.cpu > 0)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    printed, big, small, cpu = out.stdout.split()
    assert printed == "300" and 300 <= int(big) < 400 and cpu == "True"
    assert int(small) < 100  # its own, not the big one's before it
