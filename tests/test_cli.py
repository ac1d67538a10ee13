"""The `selfplay` command as a user meets it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from selfplay.core.commands.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert "selfplay 0.1.0" in capsys.readouterr().out


def test_games_lists_the_four_games_with_roles_players_and_options(capsys):
    assert main(["games", "--json"]) == 0
    games = {g["name"]: g for g in json.loads(capsys.readouterr().out)}
    assert {"tictactoe", "kuhn-poker", "rock-paper-scissors", "negotiation"} <= set(games)
    ttt = games["tictactoe"]
    assert ttt["roles"] == ["player_0", "player_1"]
    assert {"random", "minimax"} <= set(ttt["players"])
    assert ttt["options"]["max_turns"]["description"]


def test_games_table_renders(capsys):
    assert main(["games"]) == 0
    assert "kuhn-poker" in capsys.readouterr().out


def test_unknown_game_exits_2_with_a_suggestion(capsys, tmp_path):
    assert main(["run", "--game", "tictacto", "--out", str(tmp_path)]) == 2
    assert "Did you mean 'tictactoe'" in capsys.readouterr().err


def test_bad_set_key_exits_2(capsys, tmp_path):
    assert main(["run", "--set", "generation.temprature=1", "--out", str(tmp_path)]) == 2
    assert "generation.temprature" in capsys.readouterr().err


def test_run_writes_config_episodes_and_metrics(tmp_path):
    code = main(
        [
            "run",
            "--game",
            "tictactoe",
            "--cold-start",
            "0",
            "--set",
            "eval.matches=4",
            "--opponent",
            "fixed:minimax",
            "--iterations",
            "2",
            "--matches",
            "4",
            "--out",
            str(tmp_path),
            "--name",
            "demo",
            "--seed",
            "3",
        ]
    )
    assert code == 0
    folder = tmp_path / "demo"
    assert "opponent: fixed:minimax" in (folder / "config.yaml").read_text()
    episodes = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 8
    assert all(set(ep["seats"].values()) == {"learner", "scripted:minimax"} for ep in episodes)
    rows = (folder / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("iteration,") and len(rows) == 3


def test_existing_run_folder_is_not_overwritten(tmp_path, capsys):
    args = ["run", "--iterations", "1", "--matches", "2", "--cold-start", "0"]
    args += ["--out", str(tmp_path), "--name", "x"]
    assert main(args) == 0
    assert main(args) == 2
    assert "already exists" in capsys.readouterr().err


def test_version_imports_neither_torch_nor_transformers():
    code = (
        "import sys; from selfplay.core.commands.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines() == ["selfplay 0.1.0", "[]"], out.stderr
