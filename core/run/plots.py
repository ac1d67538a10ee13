"""The figures of a run report, drawn with matplotlib into PNG bytes.

Each figure is a function of the runs (`RunData`, core/run/folder/run_data.py; one or several:
their curves overlay, one colour per run) that returns PNG bytes, or None when no run has its
metrics (a game without scripted players has no evaluation curve; only a pool sampler logs Elo
ratings); a run of several learners gets a line per learner (``NAME/loss``,
``eval/NAME/OPPONENT/...``). `selfplay report` embeds them in one HTML page; at the end of every
run `write_plots` saves them as ``RUN_DIR/plots/*.png`` when matplotlib is installed
(``SELFPLAY_PLOTS=0`` turns that off).
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.core.run.folder.run_data import RunData, number, read_run
from selfplay.core.stats import wilson

INSTALL = 'pip install "selfplay-rl[report]"'
METRICS = ("loss", "kl", "entropy")  # the update's, drawn per learner
COUNTERS = {"asked", "unparsable", "stripped", "copies", "passed", "error", "checked"}


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend; a clear error when not installed."""
    try:
        import matplotlib
    except ImportError:
        raise ConfigError(
            f"The report's plots are drawn with matplotlib, which is not installed: {INSTALL}."
        ) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _figure(
    runs: Sequence[RunData], title: str, panels: Sequence[tuple[str, Callable[[Any, RunData], int]]]
) -> bytes | None:
    """One row of panels; ``draw(ax, run)`` plots a run's lines and returns how many."""
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.4), squeeze=False)
    drawn = 0
    for ax, (name, draw) in zip(axes[0], panels, strict=True):
        lines = sum(draw(ax, run) for run in runs)
        drawn += lines
        if not lines:  # a panel without data (no judge, no PSRO) is left out
            fig.delaxes(ax)
            continue
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("iteration")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    png = None
    if drawn:
        kept = len(fig.axes)
        fig.set_size_inches(5.2 * kept, 3.4)
        for k, ax in enumerate(fig.axes):
            ax.set_subplotspec(fig.add_gridspec(1, kept)[0, k])
        fig.suptitle(title, fontsize=12)
        _tight(fig)
        png = _png(fig)
    plt.close(fig)
    return png


def _tight(fig: Any) -> None:
    """``tight_layout`` without its warning when long labels leave it no room: the figure is
    drawn all the same, and the warning told a user at the end of a run nothing."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def _lines(keys: Callable[[RunData], list[str]], name: Callable[[str], str], several: bool):
    def draw(ax: Any, run: RunData) -> int:
        count = 0
        for key in keys(run):
            x, y = run.series(key)
            if x:
                label = f"{run.label}: {name(key)}" if several else name(key)
                ax.plot(x, y, marker="." if len(x) < 30 else None, label=label)
                count += 1
        return count

    return draw


def win_rates(runs: Sequence[RunData]) -> bytes | None:
    several = len(runs) > 1

    def draw(ax: Any, run: RunData) -> int:
        count = 0
        for key in run.keys("eval/", "/win_rate"):
            x, y = run.series(key)
            if not x:
                continue
            opponent = key.removeprefix("eval/").removesuffix("/win_rate")  # LEARNER/OPPONENT
            label = f"{run.label}: {opponent}" if several else opponent
            (line,) = ax.plot(x, y, marker=".", label=label)
            _, low = run.series(key + "_low")
            _, high = run.series(key + "_high")
            if len(low) == len(x) == len(high):
                ax.fill_between(x, low, high, alpha=0.15, color=line.get_color())
            count += 1
        ax.set_ylim(-0.02, 1.02)
        return count

    return _figure(runs, "Evaluation: win rate vs each opponent (95% interval)", [("", draw)])


def rewards(runs: Sequence[RunData]) -> bytes | None:
    several = len(runs) > 1

    def keys(run: RunData) -> list[str]:
        return [
            k for k in run.keys("reward/") if k.count("/") == 2 and k.split("/")[2] not in COUNTERS
        ]

    def name(key: str) -> str:
        return key.removeprefix("reward/").replace("/", " @ ")

    return _figure(
        runs,
        "Reward components per role",
        [
            ("mean reward", _lines(lambda r: ["mean_reward"], lambda k: k, several)),
            ("components", _lines(keys, name, several)),
        ],
    )


def training(runs: Sequence[RunData]) -> bytes | None:
    """Loss, KL and entropy: the shared policy's columns, or each learner's (``NAME/loss``)."""

    def keys(run: RunData, metric: str) -> list[str]:
        learners = [k.removesuffix("/loss") for k in run.keys("", "/loss") if k.count("/") == 1]
        return [metric, *(f"{name}/{metric}" for name in learners)]

    def learner(key: str) -> str:  # "loss" for the shared policy
        return key.split("/")[0]

    panels = [(m, _lines(lambda r, m=m: keys(r, m), learner, len(runs) > 1)) for m in METRICS]
    return _figure(runs, "The update: loss, KL to the reference, entropy", panels)


def exploitability(runs: Sequence[RunData]) -> bytes | None:
    several = len(runs) > 1
    draw = _lines(lambda r: r.keys("exploitability/"), lambda k: k.split("/", 1)[1], several)
    return _figure(runs, "Exploitability (0 = a Nash equilibrium)", [("", draw)])


def ratings(runs: Sequence[RunData]) -> bytes | None:
    several = len(runs) > 1
    elo = _lines(lambda r: r.keys("elo/"), lambda k: k.split("/", 1)[1], several)
    mixture = _lines(lambda r: r.keys("psro/sigma/"), lambda k: k.split("/", 2)[2], several)
    return _figure(
        runs, "Ratings and the PSRO mixture", [("Elo", elo), ("PSRO mixture weight", mixture)]
    )


def faults(runs: Sequence[RunData]) -> bytes | None:
    several = len(runs) > 1

    def draw_unreadable(ax: Any, run: RunData) -> int:
        count = 0
        for asked_key in run.keys("reward/", "/asked"):
            term = asked_key.split("/")[1]
            x, asked = run.series(asked_key)
            _, bad = run.series(f"reward/{term}/unparsable")
            if x and len(bad) == len(asked):
                rate = [b / a if a else math.nan for a, b in zip(asked, bad, strict=True)]
                ax.plot(x, rate, marker=".", label=f"{run.label}: {term}" if several else term)
                ax.set_ylim(-0.02, 1.02)
                count += 1
        return count

    invalid = _lines(lambda r: ["invalid_rate"], lambda k: "invalid moves", several)
    return _figure(
        runs,
        "Invalid moves and unreadable judge answers (share)",
        [("invalid-move rate", invalid), ("judge answers unreadable", draw_unreadable)],
    )


def crossplay(run: RunData) -> bytes | None:
    """The last cross-play table of ``run`` as a heat map: mean payoff of row vs column."""
    if not run.crossplay:
        return None
    holders = sorted({row["holder"] for row in run.crossplay})
    opponents = sorted({row["opponent"] for row in run.crossplay})
    grid = [[math.nan] * len(opponents) for _ in holders]
    for row in run.crossplay:
        grid[holders.index(row["holder"])][opponents.index(row["opponent"])] = number(
            row.get("mean_payoff")
        )
    plt = pyplot()
    width = max(4.5, 1.6 + 0.6 * len(opponents))
    fig, ax = plt.subplots(figsize=(width, 1.6 + 0.45 * len(holders)))
    image = ax.imshow(grid, cmap="RdBu", vmin=-1, vmax=1)
    ax.set_xticks(range(len(opponents)), opponents, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(holders)), holders, fontsize=7)
    ax.set_title(f"{run.label}\ncross-play: mean payoff of row vs column", fontsize=10)
    fig.colorbar(image, ax=ax)
    _tight(fig)
    png = _png(fig)
    plt.close(fig)
    return png


def before_after(runs: Sequence[RunData]) -> bytes | None:
    """The closing table as a figure: each rate before (hollow) and after (filled) training,
    with its 95% interval, one row per opponent's rate or task split."""
    rows: list[tuple[str, list[tuple[float, float, float]]]] = []
    for run in runs:
        prefix = f"{run.label}: " if len(runs) > 1 else ""
        for name in run.summary.get("after", {}):
            for rate, interval in (
                ("win_rate", "win_interval"),
                ("non_loss_rate", "non_loss_interval"),
            ):
                points = [
                    (side[name][rate], *side[name][interval])
                    for side in (run.summary.get("before", {}), run.summary["after"])
                    if name in side
                ]
                rows.append(
                    (f"{prefix}{name} {rate.removesuffix('_rate').replace('_', '-')}", points)
                )
        tasks = (run.summary.get("tasks_before", {}), run.summary.get("tasks_after", {}))
        for key in sorted(tasks[1]):
            if key.endswith("/accuracy"):
                points = []
                for side in tasks:
                    n = int(side.get(key.replace("/accuracy", "/tasks"), 0))
                    if key in side and n:
                        points.append((side[key], *wilson(round(side[key] * n), n)))
                rows.append((f"{prefix}{key.split('/')[1]} accuracy", points))
    rows = [row for row in rows if row[1]]
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.38 * len(rows)))
    for y, (_, points) in enumerate(reversed(rows)):
        for k, (value, low, high) in enumerate(points):
            last = k == len(points) - 1
            color, face = ("C1", "C1") if last else ("C0", "white")
            label = ("after" if last else "before") if y == 0 else None
            error = [[value - low], [high - value]]
            ax.errorbar(
                value,
                y + (0.12 if last else -0.12),
                xerr=error,
                fmt="o",
                color=color,
                mfc=face,
                capsize=3,
                label=label,
            )
    ax.set_yticks(range(len(rows)), [name for name, _ in reversed(rows)], fontsize=8)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("rate (95% interval)")
    ax.set_title("Before and after training (the closing table)", fontsize=10)
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=7, loc="best")
    _tight(fig)
    png = _png(fig)
    plt.close(fig)
    return png


FIGURES: dict[str, Callable[[Sequence[RunData]], bytes | None]] = {
    "before_after": before_after,
    "win_rates": win_rates,
    "rewards": rewards,
    "training": training,
    "exploitability": exploitability,
    "ratings": ratings,
    "faults": faults,
}


def figures(runs: Sequence[RunData]) -> dict[str, bytes]:
    """Every figure that has data, by name (cross-play maps one per run)."""
    drawn = {name: make(runs) for name, make in FIGURES.items()}
    for run in runs:
        drawn[f"crossplay-{run.label}" if len(runs) > 1 else "crossplay"] = crossplay(run)
    return {name: png for name, png in drawn.items() if png}


def write_plots(folder: Path) -> list[Path]:
    """``folder/plots/NAME.png`` for every figure of the run; nothing when matplotlib is
    missing or ``SELFPLAY_PLOTS=0``."""
    if os.environ.get("SELFPLAY_PLOTS", "1") == "0":
        return []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return []
    out = Path(folder) / "plots"
    out.mkdir(exist_ok=True)
    written = []
    for name, png in figures([read_run(folder)]).items():
        path = out / f"{name}.png"
        path.write_bytes(png)
        written.append(path)
    return written


def plots_at_the_end(folder: Path, say: Callable[[str], None]) -> None:
    """`write_plots` for the loop: a failure to draw is a warning, never the run's end."""
    try:
        write_plots(folder)
    except Exception as err:  # a broken matplotlib, an odd metrics.csv: the run still succeeded
        say(f"warning: the plots in {folder}/plots were not drawn ({type(err).__name__}: {err}).")
