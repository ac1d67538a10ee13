"""`selfplay report`: one self-contained HTML page; PNG plots at the end of a run."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from selfplay.api.types import Episode, Message, Turn
from selfplay.core.commands.cli import main
from selfplay.core.config import RunConfig
from selfplay.core.run.folder.episode_log import write_episodes
from selfplay.core.run.folder.run_folder import config_text
from selfplay.core.run.plots import write_plots

pytest.importorskip("matplotlib")

HEADER = (
    "iteration,mean_reward,invalid_rate,reward/outcome/player_0,reward/judge/asked,"
    "reward/judge/unparsable,loss,kl,entropy,eval/random/win_rate,eval/random/win_rate_low,"
    "eval/random/win_rate_high,exploitability/last,elo/learner,psro/sigma/learner"
)
SCRIPT = "<script>alert('x')</script>"


def fake_run(root: Path, name: str, shift: float) -> Path:
    """A run folder as `selfplay run` leaves it, written directly (no training)."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(config_text(RunConfig(game="tictactoe", matches=1)))
    rows = [
        f"{i},{0.1 * i + shift},{0.5 / i},{shift},4,{4 - i},{1 / i},{0.01 * i},{2 - 0.1 * i},"
        f"{0.2 * i},{0.1 * i},{0.3 * i},{1 / i},{1000 + i},0.5"
        for i in range(1, 4)
    ]
    (folder / "metrics.csv").write_text("\n".join([HEADER, *rows]) + "\n")
    (folder / "crossplay.csv").write_text(
        "holder,opponent,mean_payoff,matches\nlearner,snapshot:0,0.5,4\nsnapshot:0,learner,-0.5,4\n"
    )
    (folder / "ratings.csv").write_text(
        "name,elo,bt,games,wins,draws,losses\nsnapshot:0,990.5,981.25,4,1,0,3\n"
        f"learner,1009.5,1018.75,4,3,0,1\n{SCRIPT},1000,1000,0,0,0,0\n"
    )
    turns = (Turn("player_0", "learner", (Message("user", "Your move?"),), SCRIPT, None, False),)
    write_episodes(
        folder / "episodes.jsonl",
        [Episode("tictactoe", seed, {"player_0": "learner", "player_1": "learner"}, turns,
                 {"player_0": -1.0, "player_1": 1.0}) for seed in (101, 102, 103)],
    )  # fmt: skip
    return folder


@pytest.fixture
def two_runs(tmp_path) -> list[Path]:
    return [fake_run(tmp_path, "alpha", 0.0), fake_run(tmp_path, "beta", 0.5)]


def images(page: str) -> list[bytes]:
    found = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    return [base64.b64decode(data) for data in found]


def test_a_report_of_two_runs_is_one_self_contained_page(two_runs, tmp_path, capsys):
    out = tmp_path / "compare.html"
    assert main(["report", *map(str, two_runs), "--out", str(out)]) == 0
    assert f"Wrote {out}" in capsys.readouterr().out
    page = out.read_text()
    pngs = images(page)
    # win rates, rewards, the update, exploitability, ratings, faults, two cross-play maps
    assert len(pngs) == 8 and all(png.startswith(b"\x89PNG") for png in pngs)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing fetched
    assert "<script" not in page and "&lt;script&gt;" in page  # model text is escaped
    assert "<td>alpha</td>" in page and "<td>beta</td>" in page
    assert "iteration 1 · tictactoe seed 101" in page  # the first iteration's transcript
    assert "iteration 3 · tictactoe seed 103" in page  # and the last one's
    ratings = page.split("<h2>Ratings: alpha</h2>")[1].split("</table>")[0]
    assert "<th>Bradley-Terry</th>" in ratings and "<td>1018.8</td>" in ratings
    assert ratings.index("learner") < ratings.index("snapshot:0")  # best first


def test_one_run_gets_its_report_in_its_folder(two_runs):
    assert main(["report", str(two_runs[0])]) == 0
    assert (two_runs[0] / "report.html").is_file()


def test_a_report_of_several_learners_names_each_one(two_runs):
    folder = two_runs[0]
    learners = {"player_0": {}, "player_1": {"model": "tiny", "model_options": {"layers": 2}}}
    config = RunConfig(game="tictactoe", matches=1, learners=learners)
    (folder / "config.yaml").write_text(config_text(config))
    assert main(["report", str(folder)]) == 0
    page = (folder / "report.html").read_text()
    table = page.split("<h2>Learners: alpha</h2>")[1].split("</table>")[0]
    assert "<td>player_0</td><td>player_0</td><td>tiny</td><td>pg</td>" in table
    assert "<td>player_1</td><td>player_1</td>" in table
    assert main(["report", str(two_runs[1])]) == 0
    assert "<h2>Learners" not in (two_runs[1] / "report.html").read_text()  # one shared policy


def test_a_report_without_matplotlib_names_the_extra(two_runs, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["report", str(two_runs[0])]) == 2
    assert 'pip install "selfplay-rl[report]"' in " ".join(capsys.readouterr().err.split())
    assert write_plots(two_runs[0]) == []  # the end of a run goes on without plots


def test_write_plots_saves_pngs_unless_turned_off(two_runs, monkeypatch):
    monkeypatch.setenv("SELFPLAY_PLOTS", "0")
    assert write_plots(two_runs[0]) == []
    monkeypatch.setenv("SELFPLAY_PLOTS", "1")
    names = {p.name for p in write_plots(two_runs[0])}
    assert {"win_rates.png", "rewards.png", "training.png", "crossplay.png"} <= names
    assert all((two_runs[0] / "plots" / n).stat().st_size > 1000 for n in names)


def test_a_run_ends_with_its_plots(tmp_path, monkeypatch):
    monkeypatch.setenv("SELFPLAY_PLOTS", "1")
    args = ["run", "--cold-start", "0", "--iterations", "1", "--matches", "2"]
    args += ["--set", "eval.matches=2", "--set", "threads=1", "--out", str(tmp_path), "--name", "r"]
    threads = torch.get_num_threads()
    try:
        assert main(args) == 0
    finally:
        torch.set_num_threads(threads)
    assert (tmp_path / "r" / "plots" / "training.png").is_file()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium here (Debian: apt-get install chromium)")
def test_the_report_renders_in_a_headless_browser(two_runs, tmp_path):
    import matplotlib.image

    out = tmp_path / "r.html"
    assert main(["report", *map(str, two_runs), "--out", str(out)]) == 0
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1100,1400", f"--screenshot={shot}", out.as_uri()],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip
    assert shot.is_file(), "chromium wrote no screenshot"
    pixels = matplotlib.image.imread(shot)[..., :3]
    # the page shows the plots: plenty of non-white pixels, and coloured (not grey) lines
    assert (pixels.min(axis=2) < 0.9).mean() > 0.03
    spread = pixels.max(axis=2) - pixels.min(axis=2)
    assert (spread > 0.3).mean() > 0.002


def learners_run(folder: Path) -> None:
    """``folder`` as a run of two learners leaves it: each one's update columns."""
    learners = {"player_0": {}, "player_1": {"model": "tiny"}}
    config = RunConfig(game="tictactoe", matches=1, learners=learners)
    (folder / "config.yaml").write_text(config_text(config))
    head = "iteration,mean_reward,invalid_rate,eval/player_0/random/win_rate"
    names = [f"{n}/{m}" for n in learners for m in ("loss", "kl", "entropy")]
    rows = [f"{i},0.1,0.5,{0.1 * i},{','.join(str(0.1 * i + k) for k in range(6))}" for i in (1, 2)]
    (folder / "metrics.csv").write_text("\n".join([f"{head},{','.join(names)}", *rows]) + "\n")


def test_a_report_of_several_learners_draws_each_ones_update(two_runs):
    from selfplay.core.run import plots
    from selfplay.core.run.folder.run_data import read_run

    folder = two_runs[0]
    learners_run(folder)
    assert main(["report", str(folder)]) == 0
    assert 'alt="training"' in (folder / "report.html").read_text()  # NAME/loss, /kl, /entropy
    labels: list[str] = []
    ax = SimpleNamespace(plot=lambda *a, label, **k: labels.append(label) or [SimpleNamespace()])
    ax.fill_between = ax.set_ylim = lambda *a, **k: None
    panels = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "_figure", lambda runs, title, drawn: panels.update(drawn) or None)
        run = read_run(folder)
        plots.training([run])
        assert panels["entropy"](ax, run) == 2 and labels == ["player_0", "player_1"]
        plots.win_rates([run])
        panels[""](ax, run)
    assert labels[-1] == "player_0/random"  # the learner and its opponent, not the learner twice


def test_a_report_shows_the_phrasing_and_each_held_out_table_with_its_gaps(two_runs):
    import json

    folder = two_runs[0]
    options = {"phrasing": "obfuscated", "compact": True}
    config = RunConfig(game="tictactoe", matches=1, game_options=options)
    (folder / "config.yaml").write_text(config_text(config))
    figure = {"mean": 0.5, "min": 0.25, "max": 0.75, "std": 0.1}
    held = {"no-menu": {"tictactoe/draw_rate": {**figure, "gap": 0.25}}}
    report = {"suite": "solver", "measured": "model tiny", "seeds": [0], "matches": 4,
              "phrasings": ["default", "reworded"], "figures": {"tictactoe/draw_rate": figure},
              "held_out": held}  # fmt: skip
    (folder / "suites").mkdir()
    (folder / "suites" / "solver.json").write_text(json.dumps(report))
    (folder / "suites" / "solver.player_1.json").write_text(json.dumps(report))
    assert main(["report", str(folder)]) == 0
    page = (folder / "report.html").read_text()
    settings = page.split("<table>")[1].split("</table>")[0]
    assert "<th>phrasing</th>" in settings and "<td>obfuscated</td>" in settings
    held = page.split("<h3>Held out: no-menu</h3>")[1].split("</table>")[0]
    assert "<th>gap</th>" in held and "<td>+0.250</td>" in held
    assert "held out no-menu" in page and "<h2>Suite solver (learner player_1): alpha</h2>" in page


def test_a_damaged_summary_is_left_out_with_a_warning(two_runs, capsys):
    (two_runs[0] / "summary.json").write_text('{"after": {"random": ')  # cut short
    assert main(["report", str(two_runs[0])]) == 0
    said = "".join(capsys.readouterr().err.split())
    assert "summary.jsondoesnotread" in said and "leftout" in said
    assert (two_runs[0] / "report.html").is_file()


def test_out_names_a_folder_or_is_refused_before_any_figure_is_drawn(
    two_runs, tmp_path, capsys, monkeypatch
):
    from selfplay.core.run import plots

    folder = tmp_path / "pages"
    folder.mkdir()
    assert main(["report", str(two_runs[0]), "--out", str(folder)]) == 0
    assert (folder / "report.html").is_file()  # FOLDER/report.html
    (tmp_path / "notes").write_text("kept\n")
    monkeypatch.setattr(plots, "figures", lambda runs: pytest.fail("drew before --out was checked"))
    assert main(["report", str(two_runs[0]), "--out", str(tmp_path / "notes" / "r.html")]) == 2
    said = "".join(capsys.readouterr().err.split())
    assert f"{tmp_path / 'notes'}isafile,notafolder".replace(" ", "") in said
    assert (tmp_path / "notes").read_text() == "kept\n"


def test_what_is_not_a_run_is_named(two_runs, tmp_path, capsys):
    def refused(path) -> str:
        assert main(["report", str(path)]) == 2
        return "".join(capsys.readouterr().err.split())

    assert f"holdsruns({two_runs[1]})".replace(" ", "") in refused(tmp_path)
    assert "doesnotexist" in refused(tmp_path / "missing")
    traces = tmp_path / "traces" / "solver"
    traces.mkdir(parents=True)
    (traces / "default.jsonl").write_text('{"format": "open_spiel.match_trace"}\n')
    assert "holdsmatchtraces,notarun(selfplayshow" in refused(tmp_path / "traces")
