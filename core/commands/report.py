"""`selfplay report`: one self-contained HTML page about one run, or several compared.

    selfplay report runs/NAME                  -> runs/NAME/report.html
    selfplay report runs/A runs/B --out ab.html

The page holds the runs' settings (the phrasing each trained under; in a run of several
learners, each learner's roles, model and objective: the page covers every learner, so the
command takes no ``--learner``), every figure of `selfplay.core.run.plots` as an embedded PNG
(curves of several runs overlay), the evaluation suites measured on each run (``selfplay eval
--suite NAME RUN_DIR`` saves them in ``RUN_DIR/suites/NAME.json``: each figure's mean over seeds
and phrasings, its min-max and standard deviation; each held-out phrasing apart, with its gap),
and a few transcripts of the first and the last iteration of each run.
Nothing is fetched when it is opened: no script, no font, no stylesheet from elsewhere; it can
be mailed or archived as one file. Text a model wrote is escaped, so it shows as text and never
acts as markup.
"""

from __future__ import annotations

import argparse
import base64
import csv
import html
import os
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.types import Episode
from selfplay.api.verifier import printable

TRANSCRIPTS = 2  # matches shown from the first and from the last iteration of each run
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
img { max-width: 100%; display: block; margin: 1em 0; }
pre { background: #f6f6f6; padding: 0.6em; white-space: pre-wrap; font-size: 0.85em; }
.turn { margin-left: 1em; } .invalid { color: #b00; } .muted { color: #777; }
"""
SETTINGS = ("game", "model", "reward", "opponent", "estimator", "objective", "matches", "seed")


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("runs", nargs="+", type=Path, metavar="RUN_DIR", help="run folders (several: compared)")
    add(
        "--out",
        type=Path,
        help="the HTML file (a folder: FOLDER/report.html); default RUN_DIR/report.html, or "
        "./report.html for several runs",
    )


def cmd_report(args: argparse.Namespace) -> int:
    out = args.out or (args.runs[0] / "report.html" if len(args.runs) == 1 else Path("report.html"))
    path = write_report(args.runs, out)
    print(f"Wrote {path}")
    return 0


def write_report(folders: list[Path], out: Path) -> Path:
    from selfplay.core.run.folder.run_data import read_run
    from selfplay.core.run.plots import figures

    labels, out = _labels(folders), _out_file(Path(out))
    runs = [read_run(folder, label) for folder, label in zip(folders, labels, strict=True)]
    drawn = figures(runs)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>selfplay report: {_e(', '.join(labels))}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>selfplay report: {_e(', '.join(labels))}</h1>",
        _settings(folders, labels, runs),
        *(row for f, label in zip(folders, labels, strict=True) for row in _learners(f, label)),
        "<h2>Curves</h2>",
    ]
    if not drawn:
        parts.append('<p class="muted">No metric to plot yet.</p>')
    for name, png in drawn.items():
        data = base64.b64encode(png).decode("ascii")
        parts.append(f'<img alt="{_e(name)}" src="data:image/png;base64,{data}">')
    for folder, label in zip(folders, labels, strict=True):
        parts.extend(_ratings(folder, label))
    for folder, label in zip(folders, labels, strict=True):
        parts.extend(_suites(folder, label))
    for folder, label in zip(folders, labels, strict=True):
        parts.append(f"<h2>Transcripts: {_e(label)}</h2>")
        parts.extend(_transcripts(folder))
    parts.append("</body></html>")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(parts), encoding="utf-8")
    except OSError as err:
        why = err.strerror or err
        raise ConfigError(f"Cannot write {out} ({why}); pass another --out.") from None
    return out


def _out_file(out: Path) -> Path:
    """``out``, or ``out/report.html`` where it names a folder; refused before any work where
    it lies under a file or in a read-only folder."""
    out = out / "report.html" if out.is_dir() else out
    found = next(p for p in (out.parent, *out.parent.parents) if p.exists())
    if not found.is_dir():
        raise ConfigError(
            f"--out {out}: {found} is a file, not a folder; pass e.g. --out report.html."
        )
    if not os.access(found, os.W_OK):
        raise ConfigError(f"--out {out}: {found} is read-only; pass a path you can write to.")
    return out


def _labels(folders: list[Path]) -> list[str]:
    """The runs' folder names, made unique with their parents when two share a name."""
    for folder in folders:
        if not (Path(folder) / "config.yaml").is_file():
            raise ConfigError(f"{_not_a_run(Path(folder))}; pass run folders such as runs/NAME.")
    names = [Path(f).name for f in folders]
    return [
        f"{Path(f).parent.name}/{n}" if names.count(n) > 1 else n
        for f, n in zip(folders, names, strict=True)
    ]


def _not_a_run(folder: Path) -> str:
    """What ``folder``, which has no config.yaml, is instead."""
    from selfplay.core.commands.traces import is_trace_source

    if not folder.exists():
        return f"{folder} does not exist"
    runs = sorted(p for p in folder.glob("*/config.yaml")) if folder.is_dir() else []
    if runs:
        return f"{folder} is not a run folder (no config.yaml) but holds runs ({runs[-1].parent})"
    if is_trace_source(folder):
        return f"{folder} holds match traces, not a run (selfplay show {folder} reads them)"
    return f"{folder} is not a run folder (no config.yaml)"


def _settings(folders: list[Path], labels: list[str], runs: list[Any]) -> str:
    from selfplay.core.run.folder.run_folder import read_config_data

    rows = ["<table><tr><th>run</th>", *(f"<th>{k}</th>" for k in SETTINGS)]
    rows.append("<th>phrasing</th><th>iterations</th><th>last mean reward</th></tr>")
    for folder, label, run in zip(folders, labels, runs, strict=True):
        data = read_config_data(folder)
        cells = "".join(f"<td>{_e(str(data.get(key, '')))}</td>" for key in SETTINGS)
        cells += f"<td>{_e(_phrasing(data))}</td>"
        done = len(run.columns.get("iteration", []))
        _, reward = run.series("mean_reward")
        last = f"{reward[-1]:+.3f}" if reward else ""
        rows.append(f"<tr><td>{_e(label)}</td>{cells}<td>{done}</td><td>{last}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _phrasing(data: dict[str, Any]) -> str:
    """The prompt wording the run trained under (``game_options.phrasing``)."""
    from selfplay.api.game import DEFAULT_PHRASING

    options = data.get("game_options")
    return str((options if isinstance(options, dict) else {}).get("phrasing", DEFAULT_PHRASING))


def _learners(folder: Path, label: str) -> list[str]:
    """A run of several learners: each one's roles, model and objective (its curves are the
    ``NAME/...`` and ``eval/NAME/...`` ones); nothing for one shared policy."""
    from selfplay.core.config.learners import learner_config, learner_roles
    from selfplay.core.run.folder.run_folder import read_config

    config = read_config(Path(folder))
    if not config.learners:
        return []
    head = ("learner", "roles", "model", "objective", "estimator")
    table = ["<table><tr>", *(f"<th>{h}</th>" for h in head), "</tr>"]
    for name, settings in config.learners.items():
        own = learner_config(config, name)
        cells = (name, ", ".join(learner_roles(name, settings)), own.model, own.objective)
        cells += (own.estimator,)
        table.append("<tr>" + "".join(f"<td>{_e(str(c))}</td>" for c in cells) + "</tr>")
    table.append("</table>")
    return [f"<h2>Learners: {_e(label)}</h2>", "".join(table)]


def _ratings(folder: Path, label: str) -> list[str]:
    """The pool's final ratings (``ratings.csv``): Elo and the Bradley-Terry fit, best first."""
    path = Path(folder) / "ratings.csv"
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return []
    rows.sort(key=lambda r: -float(r.get("bt") or r.get("elo") or 0))
    head = ("name", "elo", "bt", "games", "wins", "draws", "losses")
    names = {"elo": "Elo", "bt": "Bradley-Terry"}
    table = ["<table><tr>", *(f"<th>{names.get(h, h)}</th>" for h in head)]
    table.append("</tr>")
    for row in rows:
        cells = [_e(row.get("name", ""))]
        cells += [_number(row.get(k, "")) for k in head[1:]]
        table.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    table.append("</table>")
    return [f"<h2>Ratings: {_e(label)}</h2>", "".join(table)]


def _suites(folder: Path, label: str) -> list[str]:
    """Each suite report saved in the run folder: every figure's mean and spread, and each
    held-out phrasing apart with its gap to the pooled mean."""
    from selfplay.core.commands.suites import saved_reports

    parts = []
    for report in saved_reports(Path(folder)):
        seeds = " ".join(str(s) for s in report.get("seeds", []))
        pooled = " ".join(report.get("phrasings", ["default"]))
        held = " ".join(report.get("held_out", {}))
        about = (
            f"{report.get('measured', '')} · seeds {seeds} · phrasings {pooled}"
            f"{f' · held out {held}' if held else ''} · {report.get('matches', '')} "
            f"matches per opponent · {report.get('seconds', '')} s"
        )
        learner = f" (learner {report['learner']})" if report.get("learner") else ""
        parts += [
            f"<h2>Suite {_e(report.get('suite', '?'))}{_e(learner)}: {_e(label)}</h2>",
            f'<p class="muted">{_e(about)}</p>',
            _figures_table(report["figures"]),
        ]
        for phrasing, figures in report.get("held_out", {}).items():
            parts += [
                f"<h3>Held out: {_e(phrasing)}</h3>",
                f'<p class="muted">gap = the mean under {_e(pooled)} minus the mean under '
                f"{_e(phrasing)}: what the score owes to the familiar wording</p>",
                _figures_table(figures, gaps=True),
            ]
    return parts


def _figures_table(figures: Any, gaps: bool = False) -> str:
    head = ("figure", "mean", "min – max", "std", *(("gap",) if gaps else ()))
    table = ["<table><tr>", *(f"<th>{h}</th>" for h in head), "</tr>"]
    for name, figure in (figures if isinstance(figures, dict) else {}).items():
        try:
            mean, low, high, std = (float(figure[k]) for k in ("mean", "min", "max", "std"))
            gap = f"<td>{float(figure['gap']):+.3f}</td>" if gaps and "gap" in figure else ""
        except (KeyError, TypeError, ValueError):
            continue
        gap = gap or ("<td></td>" if gaps else "")
        table.append(
            f"<tr><td>{_e(name)}</td><td>{mean:.3f}</td><td>{low:.3f} – {high:.3f}</td>"
            f"<td>{std:.3f}</td>{gap}</tr>"
        )
    table.append("</table>")
    return "".join(table)


def _number(text: str) -> str:
    try:
        value = float(text)
    except ValueError:
        return _e(text)
    return str(int(value)) if value.is_integer() and abs(value) < 1e6 else f"{value:.1f}"


def _transcripts(folder: Path) -> list[str]:
    from selfplay.core.run.folder.episode_log import episode_iteration, iter_numbered
    from selfplay.core.run.folder.run_folder import read_config_data

    log = Path(folder) / "episodes.jsonl"
    if not log.is_file():
        return ['<p class="muted">No episodes.jsonl.</p>']
    matches = int(read_config_data(folder).get("matches") or 1)
    first: list[tuple[int, Episode]] = []
    last: list[tuple[int, Episode]] = []
    for line, episode in iter_numbered(log):
        iteration = episode_iteration(episode, line, matches)
        if not first or (first[0][0] == iteration and len(first) < TRANSCRIPTS):
            first.append((iteration, episode))
        if last and last[0][0] != iteration:
            last = []
        if len(last) < TRANSCRIPTS:
            last.append((iteration, episode))
    shown = first + ([] if last and first and last[0][0] == first[0][0] else last)
    return [_episode_html(iteration, episode) for iteration, episode in shown]


def _episode_html(iteration: int, episode: Episode) -> str:
    seats = ", ".join(f"{r}={h}" for r, h in episode.seats.items())
    payoffs = ", ".join(f"{r} {v:+g}" for r, v in episode.outcome.items())
    parts = [
        f"<h3>iteration {iteration} · {_e(episode.game)} seed {episode.seed}</h3>",
        f'<p class="muted">{_e(seats)} · payoffs {_e(payoffs)}</p>',
    ]
    per_turn = episode.record.get("rewards", {}).get("turns") or []
    for i, turn in enumerate(episode.turns):
        parts.append(
            f'<div class="turn{"" if turn.valid else " invalid"}"><b>{_e(turn.role)}</b> '
            f"({_e(turn.seat)}){'' if turn.valid else ' · invalid: ' + _e(turn.reason or '')}"
        )
        if turn.prompt:
            parts.append(f'<pre class="muted">{_e(turn.prompt[-1].content)}</pre>')
        parts.append(f"<pre>{_e(turn.text)}</pre>")
        if i < len(per_turn) and per_turn[i]:
            shares = ", ".join(f"{k} {v}" for k, v in per_turn[i].items())
            parts.append(f'<span class="muted">reward: {_e(shares)}</span>')
        parts.append("</div>")
    for term, notes in episode.record.get("notes", {}).items():
        for note in notes:
            read = "unreadable" if note.get("score") is None else f"read as {note['score']}"
            parts.append(
                f"<p>{_e(term)} ({_e(read)}): <code>{_e(note.get('answer', ''))}</code></p>"
            )
    return "\n".join(parts)


def _e(text: str) -> str:
    """Escaped for HTML, control characters made visible."""
    return html.escape(printable(str(text)))
