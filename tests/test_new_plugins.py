"""`selfplay new objective|reward|sampler NAME`: each rendered plug-in installs, passes its own
tests, is listed with its options and trains; docs/plugins.md shows each exactly as rendered."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfplay.core.commands.cli import main
from selfplay.core.commands.scaffold import ScaffoldError, render_plugin

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
NAMES = {"objective": "sequence-pg", "reward": "quick-win", "sampler": "mostly"}
LISTING = {"objective": "objectives", "reward": "rewards", "sampler": "opponents"}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    """Every kind rendered and pip-installed into one folder of their own."""
    root = tmp_path_factory.mktemp("new-plugins")
    folders = {kind: render_plugin(kind, name, root / "work") for kind, name in NAMES.items()}
    target = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--target", str(target), *map(str, folders.values())], check=True)
    return target, folders


def with_site(target: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(target)}
    env["SELFPLAY_LOAD_PLUGINS"] = ",".join(f"selfplay-plugin-{name}" for name in NAMES.values())
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_the_rendered_plugin_passes_its_own_tests(site, kind):
    target, folders = site
    tests = folders[kind] / "tests"
    out = with_site(target, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests), cwd=tests)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " passed" in out.stdout and "failed" not in out.stdout


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_the_rendered_plugin_is_listed_with_its_plugin(site, kind, tmp_path):
    target, _ = site
    listed = with_site(
        target, "-m", "selfplay.core.commands.cli", LISTING[kind], "--json", cwd=tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows[NAMES[kind]]["plugin"] == f"selfplay-plugin-{NAMES[kind]} 0.1.0"
    if kind == "objective":
        assert rows["sequence-pg"]["options"]["beta"]["default"] == 0.05
        assert rows["sequence-pg"]["reads"] == (
            "objective_options.role_lr_scale, objective_options.update_epochs, the estimator"
        )


RUNS = {
    "objective": ["--objective", "sequence-pg"],
    "reward": ["--reward", "outcome+quick-win=0.5"],
    "sampler": ["--opponent", "mostly:random", "--set", "opponent_options.share=0.5"],
}


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_the_rendered_plugin_trains(site, kind, tmp_path):
    target, _ = site
    run = ["-m", "selfplay.core.commands.cli", "run", *RUNS[kind], "--cold-start", "0"]
    run += ["--iterations", "1", "--matches", "8", "--set", "eval.matches=2"]
    run += ["--out", str(tmp_path), "--name", kind]
    trained = with_site(target, *run, cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    with (tmp_path / kind / "metrics.csv").open() as f:
        (row,) = csv.DictReader(f)
    if kind == "objective":
        assert int(row["update_steps"]) >= 1 and float(row["answer_logp"]) < 0
        assert float(row["kl"]) >= 0 and float(row["answers"]) > 0
        assert "policy" not in row and "clip_fraction" not in row  # pg's columns, not its own
    elif kind == "reward":
        assert any(key.startswith("reward/quick-win/") for key in row)  # the winners scored
    else:
        lines = (tmp_path / kind / "episodes.jsonl").read_text().splitlines()
        seats = {holder for line in lines for holder in json.loads(line)["seats"].values()}
        assert "scripted:random" in seats and "learner" in seats


def test_an_unread_setting_is_refused_for_a_plug_in_objective_too(site, tmp_path):
    target, _ = site
    run = ["-m", "selfplay.core.commands.cli", "run", "--objective", "sequence-pg"]
    run += ["--set", "train.clip=0.3", "--out", str(tmp_path), "--name", "x"]
    refused = with_site(target, *run, cwd=tmp_path)
    assert refused.returncode == 2
    assert "objective 'sequence-pg' does not read" in " ".join(refused.stderr.split())


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("objective", "selfplay_plugin_sequence_pg/__init__.py"),
        ("reward", "selfplay_plugin_quick_win/__init__.py"),
        ("sampler", "selfplay_plugin_mostly/__init__.py"),
    ],
)
def test_the_guide_shows_each_plugin_as_rendered(kind, path, tmp_path):
    rendered = render_plugin(kind, NAMES[kind], tmp_path) / path
    assert rendered.read_text() in GUIDE.read_text(), (
        f"docs/plugins.md must show {path} exactly as `selfplay new {kind} {NAMES[kind]}` "
        "renders it"
    )


def test_cli_new_says_how_to_run_what_it_made(tmp_path, capsys):
    assert main(["new", "reward", "par-bonus", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "selfplay run --reward outcome+par-bonus=0.5" in out
    with pytest.raises(ScaffoldError, match="'pg' is already registered"):
        render_plugin("objective", "pg", tmp_path)
