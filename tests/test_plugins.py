"""The plugin machinery: built-ins, real entry-point discovery, clashes and broken plugins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfplay import Game, hookimpl
from selfplay.plugins import manager
from selfplay.plugins.registry import PluginError, Registry, UnknownName

PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """The test plugins installed by pip into a folder of their own (real entry-point metadata)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(PLUGINS / "selfplay-plugin-coin"),
            str(PLUGINS / "selfplay-plugin-broken"),
        ],
        check=True,
        capture_output=True,
    )
    return target


def selfplay_cli(site: Path, *args: str, load: str | None = None, strict: bool = False, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("SELFPLAY_LOAD_PLUGINS", None)
    if load is not None:
        env["SELFPLAY_LOAD_PLUGINS"] = load
    if strict:
        env["SELFPLAY_STRICT_PLUGINS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "selfplay.core.commands.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_builtins_register_through_the_hooks():
    regs = manager.registries()
    assert {"tictactoe", "kuhn-poker", "rock-paper-scissors", "negotiation"} <= set(
        regs.games.entries
    )
    assert "outcome" in regs.rewards
    assert {"latest", "fixed"} <= set(regs.opponent_samplers.entries)
    assert "tiny" in regs.models
    assert all(info.builtin and info.error is None for info in manager.load().plugins)


def test_installed_plugin_game_is_listed_and_playable(plugin_site, tmp_path):
    listed = selfplay_cli(plugin_site, "games", "--json", load="selfplay-plugin-coin")
    assert listed.returncode == 0, listed.stderr
    coin = next(g for g in json.loads(listed.stdout) if g["name"] == "coin-guess")
    assert coin["roles"] == ["hider", "guesser"]
    assert coin["plugin"] == "selfplay-plugin-coin 0.3.0"
    played = selfplay_cli(
        plugin_site,
        "run",
        "--cold-start",
        "2",
        "--set",
        "eval.matches=4",
        "--game",
        "coin-guess",
        "--opponent",
        "fixed:random",
        "--iterations",
        "1",
        "--matches",
        "4",
        "--out",
        str(tmp_path),
        "--name",
        "coin",
        load="selfplay-plugin-coin",
    )
    assert played.returncode == 0, played.stderr
    lines = (tmp_path / "coin" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["game"] == "coin-guess" for line in lines)


def test_plugins_command_names_distribution_version_and_registrations(plugin_site):
    out = selfplay_cli(plugin_site, "plugins", "--json")
    assert out.returncode == 0, out.stderr
    rows = {row["name"]: row for row in json.loads(out.stdout)}
    assert rows["selfplay-plugin-coin"]["version"] == "0.3.0"
    assert rows["selfplay-plugin-coin"]["registered"] == {"games": ["coin-guess"]}
    assert "ModuleNotFoundError" in rows["selfplay-plugin-broken"]["error"]


def test_broken_plugin_is_one_warning_line_and_the_rest_runs(plugin_site):
    out = selfplay_cli(plugin_site, "games", "--json")
    assert out.returncode == 0
    warnings = [line for line in out.stderr.splitlines() if "failed to load" in line]
    assert len(warnings) == 1
    line = warnings[0]
    assert "selfplay-plugin-broken 0.0.1" in line
    assert "broken = selfplay_plugin_broken" in line
    assert "selfplay_dependency_that_does_not_exist" in line


def test_a_run_that_needs_a_missing_game_exits_2_and_mentions_the_broken_plugin(
    plugin_site, tmp_path
):
    out = selfplay_cli(plugin_site, "run", "--game", "broken-game", "--out", str(tmp_path))
    assert out.returncode == 2
    assert "Unknown game 'broken-game'" in out.stderr
    assert "selfplay-plugin-broken" in out.stderr


def test_strict_mode_reraises(plugin_site):
    out = selfplay_cli(plugin_site, "games", strict=True)
    assert out.returncode != 0
    assert "selfplay_dependency_that_does_not_exist" in out.stderr


def test_load_list_empty_loads_no_third_party_plugin(plugin_site):
    out = selfplay_cli(plugin_site, "games", "--json", load="")
    names = {g["name"] for g in json.loads(out.stdout)}
    assert "coin-guess" not in names and "tictactoe" in names
    assert "failed to load" not in out.stderr


class Clash(Game):
    name = "tictactoe"
    roles = ("a", "b")
    description = "clashes with the built-in"


class ClashPlugin:
    @staticmethod
    @hookimpl
    def register_games(register):
        register(Clash)


def test_name_clash_names_both_plugins_when_the_name_is_used(monkeypatch, capsys):
    monkeypatch.setattr(manager, "DEFAULT_PLUGINS", (*manager.DEFAULT_PLUGINS, "tests_clash"))
    module = type(sys)("tests_clash")
    module.register_games = ClashPlugin.register_games
    monkeypatch.setitem(sys.modules, "tests_clash", module)
    games = manager.load().registries.games  # loading (and listing) still works
    assert "Two plugins register the game 'tictactoe'" in capsys.readouterr().err
    with pytest.raises(PluginError, match=r"selfplay.games.tictactoe and tests_clash"):
        games.get("tictactoe")
    assert games.get("kuhn-poker") is not None


def test_misspelt_hook_is_one_warning_naming_the_hook(monkeypatch, capsys):
    module = type(sys)("tests_typo")

    @hookimpl
    def register_gmaes(register):  # the typo is the point
        pass

    module.register_gmaes = register_gmaes
    monkeypatch.setitem(sys.modules, "tests_typo", module)
    monkeypatch.setattr(manager, "DEFAULT_PLUGINS", (*manager.DEFAULT_PLUGINS, "tests_typo"))
    assert "tictactoe" in manager.load().registries.games
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "register_gmaes" in x]
    assert "tests_typo" in line and "did you mean 'register_games'" in line


def test_strict_mode_rejects_a_misspelt_hook(monkeypatch):
    module = type(sys)("tests_typo")

    @hookimpl
    def register_gmaes(register):
        pass

    module.register_gmaes = register_gmaes
    monkeypatch.setitem(sys.modules, "tests_typo", module)
    monkeypatch.setattr(manager, "DEFAULT_PLUGINS", ("tests_typo",))
    monkeypatch.setenv("SELFPLAY_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="register_gmaes"):
        manager.load()


@pytest.mark.parametrize("name", ["TicTacToe", "tic_tac_toe", "-x", "x-", "", "a b"])
def test_names_must_be_lowercase_kebab(name):
    with pytest.raises(PluginError, match="kebab"):
        Registry("game").add(name, object(), "someplugin")


def test_unknown_name_suggests_the_close_one():
    with pytest.raises(UnknownName, match="Did you mean 'tictactoe'"):
        manager.registries().games.get("tictactoe2")
