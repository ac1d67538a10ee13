"""`selfplay new game NAME`: the rendered plugin installs, passes its own tests and trains."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfplay.core.commands.cli import main
from selfplay.core.commands.scaffold import ScaffoldError, render_game_plugin, template_values


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> tuple[Path, Path]:
    """The template rendered as selfplay-plugin-my-duel, pip-installed into a folder of its own.

    Returns (the rendered folder, the folder it is installed in).
    """
    root = tmp_path_factory.mktemp("new-game")
    folder = render_game_plugin("my-duel", root / "work")
    site = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--target", str(site), str(folder)], check=True, capture_output=True)
    return folder, site


def with_site(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python ARGS`` with the installed plugin importable and the only plugin loaded."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    env["SELFPLAY_LOAD_PLUGINS"] = "selfplay-plugin-my-duel"
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_rendered_plugin_has_every_part(rendered):
    rendered, _ = rendered
    package = rendered / "selfplay_plugin_my_duel"
    names = {p.name for p in rendered.iterdir()}
    assert {"README.md", "pyproject.toml", "selfplay_plugin_my_duel", "tests"} <= names
    pyproject = (rendered / "pyproject.toml").read_text()
    assert '[project.entry-points.selfplay]\nmy-duel = "selfplay_plugin_my_duel"' in pyproject
    assert 'name = "selfplay-plugin-my-duel"' in pyproject
    assert (package / "__init__.py").read_text().count("@hookimpl") == 1
    assert "class MyDuel(Game)" in (package / "game.py").read_text()
    assert "check_game(MyDuel" in (rendered / "tests" / "test_game.py").read_text()
    readme = (rendered / "README.md").read_text()
    for part in ("## Rules", "## Roles", "## Outcome", "selfplay run --game my-duel"):
        assert part in readme
    assert not list(rendered.rglob("*.tmpl")) and "${" not in pyproject + readme


def test_rendered_plugin_passes_its_own_tests(rendered):
    folder, site = rendered
    tests = folder / "tests"
    out = with_site(site, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests), cwd=tests)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout


def test_installed_plugin_is_listed_and_trains(rendered, tmp_path):
    _, site = rendered
    cli = ("-m", "selfplay.core.commands.cli")
    listed = with_site(site, *cli, "games", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    game = next(g for g in json.loads(listed.stdout) if g["name"] == "my-duel")
    assert game["roles"] == ["first", "second"]
    assert game["plugin"] == "selfplay-plugin-my-duel 0.1.0"
    assert {"random", "perfect"} <= set(game["players"])
    run = ["run", "--game", "my-duel", "--cold-start", "0", "--iterations", "1", "--matches", "4"]
    run += ["--set", "eval.matches=2", "--out", str(tmp_path), "--name", "duel"]
    played = with_site(site, *cli, *run, cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    lines = (tmp_path / "duel" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["game"] == "my-duel" for line in lines)


def test_cli_new_game_creates_the_folder_and_says_what_next(tmp_path, capsys):
    assert main(["new", "game", "coin-flip", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "selfplay run --game coin-flip" in out
    assert (tmp_path / "selfplay-plugin-coin-flip" / "selfplay_plugin_coin_flip").is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["selfplay-plugin-coin-flip"]  # no leftovers


@pytest.mark.parametrize("name", ["MyDuel", "my_duel", "my--duel", "-duel", "duel-", "9men", ""])
def test_bad_names_are_refused_naming_the_value_and_the_rule(name, tmp_path):
    with pytest.raises(ScaffoldError, match="kebab-case") as err:
        render_game_plugin(name, tmp_path)
    assert repr(name) in str(err.value)
    assert not any(tmp_path.iterdir())


def test_an_existing_folder_is_never_overwritten(tmp_path, capsys):
    (tmp_path / "selfplay-plugin-my-duel").mkdir()
    (tmp_path / "selfplay-plugin-my-duel" / "mine.txt").write_text("keep me")
    assert main(["new", "game", "my-duel", "--dir", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "selfplay-plugin-my-duel" / "mine.txt").read_text() == "keep me"


def test_names_become_valid_python_names():
    values = template_values("connect-4")
    assert values["package"] == "selfplay_plugin_connect_4" and values["package"].isidentifier()
    assert values["class_name"] == "Connect4" and values["class_name"].isidentifier()


def test_a_name_taken_by_a_registered_game_is_refused(tmp_path):
    with pytest.raises(ScaffoldError, match=r"'tictactoe' is already registered .*tictactoe"):
        render_game_plugin("tictactoe", tmp_path)
