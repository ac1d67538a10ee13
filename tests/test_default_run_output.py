"""What one short default run prints and writes, as a new user meets it: the recipe before the
cold start, no library noise, the closing table saved, the run folder's files as README lists
them, a closed pipe, exported files' modes."""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import sys
from pathlib import Path

import pytest
from rich.console import Console

from selfplay.core.commands.cli import main
from selfplay.core.machine.hardware import quiet_libraries
from selfplay.core.run.folder.run_data import read_run
from selfplay.core.run.plots import before_after

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tictactoe_run(tmp_path_factory):
    """One short run with a cold start, its console output and its folder."""
    out = tmp_path_factory.mktemp("runs")
    args = ["run", "--iterations", "1", "--matches", "2", "--cold-start", "2"]
    args += ["--set", "eval.matches=2", "--out", str(out), "--name", "t"]
    stderr = io.StringIO()
    console = Console(file=stderr, width=200, color_system=None)
    from selfplay.core.commands import run as command

    original = command.Console
    command.Console = lambda stderr=False, **kw: console if stderr else original(**kw)
    try:
        assert main(args) == 0
    finally:
        command.Console = original
    return out / "t", stderr.getvalue()


def test_library_noise_is_quieted_and_figures_do_not_warn(tictactoe_run, recwarn):
    quiet_libraries()
    assert logging.getLogger("transformers.tokenization_utils_base").level == logging.ERROR
    run = read_run(tictactoe_run[0])
    assert before_after([run]) is not None
    assert not [w for w in recwarn if "layout" in str(w.message).lower()]
    output = tictactoe_run[1]
    assert "Token indices sequence length" not in output and "Deprecat" not in output


def test_the_games_own_settings_show_before_the_cold_start(tictactoe_run):
    output = tictactoe_run[1]
    assert output.index("recipe tictactoe") < output.index("cold start:")


def test_the_closing_table_is_saved_in_the_run_folder(tictactoe_run):
    folder = tictactoe_run[0]
    summary = json.loads((folder / "summary.json").read_text())
    assert set(summary) == {"before", "after", "tasks_before", "tasks_after"}
    assert summary["after"]["random"]["matches"] == 2
    assert "non-loss [95% CI]" in (folder / "summary.txt").read_text()


def test_a_closed_pipe_is_not_an_error(tictactoe_run, monkeypatch):
    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["show", str(tictactoe_run[0]), "--all"]) == 0


def test_exported_files_all_get_the_same_mode(tictactoe_run, tmp_path):
    old = os.umask(0o022)
    try:
        assert main(["export", str(tictactoe_run[0]), str(tmp_path / "hf")]) == 0
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "hf").iterdir()}
    assert modes["model.safetensors"] == 0o644 and set(modes.values()) == {0o644}


def test_the_quick_start_lists_every_file_of_the_run_folder():
    quick_start = (ROOT / "README.md").read_text().split("## Commands")[0]
    for name in ("plots/", "ratings.csv", "crossplay.csv", "summary.json", "episodes.jsonl"):
        assert f"`{name}`" in quick_start, name
