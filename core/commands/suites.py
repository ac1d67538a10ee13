"""`selfplay eval --suite NAME`: a registered evaluation suite run on any policy.

    selfplay eval --suite solver RUN_DIR|CHECKPOINT     the saved policy
    selfplay eval --suite solver --model tiny          any model --model accepts: a baseline
    selfplay eval --suite solver --model 'openai:URL#MODEL' [RUN_DIR]
                                                       a served model (with that run's game
                                                       options and temperature, when given)

The host builds the policy, lends the suite a bench (its games, greedy seeded matches against
scripted players, the policy's table) and runs it once per prompt phrasing (``--phrasings``;
every game's ``default`` wording and its ``reworded`` one, `Game.phrasings`), each time on
every seed. Each figure is reported as its mean over all (seed, phrasing) values with their
min-max spread and standard deviation; ``--json`` adds every value. A phrasing held out
(``--held-out obfuscated``, or a suite's own ``held_out``) is measured on the same seeds and
reported apart, with its gap to the pooled mean: what the score owes to the familiar form of
the game. Measuring a run folder (or one of its checkpoints) also saves the report in the run
folder as ``suites/NAME.json``, which ``selfplay report`` shows. Suites register through the
``register_suites`` hook (api/tasks.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.game import DEFAULT_PHRASING
from selfplay.api.policy import Policy
from selfplay.api.tasks import Suite
from selfplay.core.commands.bench import HostBench, check_phrasings

DEFAULT_SEEDS = (0, 1, 2)
PHRASINGS = (DEFAULT_PHRASING, "reworded")  # the wordings every shipped suite game has
SAVED = "suites"  # a run folder's folder of saved suite reports, one NAME.json per suite


def add_suite_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--suite", metavar="NAME", help="run a registered evaluation suite (e.g. solver)")
    add("--model", metavar="M", help="with --suite: measure this model instead of a run's")
    add("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS), help="with --suite")
    add(
        "--phrasings",
        nargs="+",
        default=list(PHRASINGS),
        metavar="NAME",
        help="with --suite: the prompt wordings to measure under (default: default reworded)",
    )
    add(
        "--held-out",
        nargs="+",
        default=None,
        metavar="NAME",
        help="with --suite: phrasings to measure apart, each with its gap to the others' mean "
        "(e.g. obfuscated no-menu; default: the suite's own, none for the built-in ones)",
    )
    add(
        "--traces",
        type=Path,
        metavar="DIR",
        help="with --suite: write every match as an OpenSpiel match trace, with each move's "
        "prompt and raw answer, to DIR/SUITE/PHRASING.jsonl (selfplay show DIR reads them)",
    )


def check_suite_flags(args: argparse.Namespace) -> None:
    """Refuse the flags only a suite reads, given without ``--suite`` (they would be ignored)."""
    given = [
        flag
        for flag, value, default in (
            ("--seeds", args.seeds, list(DEFAULT_SEEDS)),
            ("--phrasings", args.phrasings, list(PHRASINGS)),
            ("--held-out", args.held_out, None),
            ("--traces", args.traces, None),
        )
        if value != default
    ]
    if args.suite is None and given:
        it = "it" if len(given) == 1 else "them"
        raise ConfigError(
            f"{' and '.join(given)} only with --suite: without one, `selfplay eval` measures a "
            f"run folder against scripted players and would ignore {it}. Name a suite (e.g. "
            f"--suite solver), or drop {it}."
        )


def find_suite(name: str) -> Suite:
    from selfplay.plugins.manager import registries

    suites = registries().suites
    if name not in suites:
        known = ", ".join(entry.name for entry in suites) or "none"
        raise ConfigError(f"Unknown suite {name!r}; the known suites are: {known}.")
    return suites.get(name)


def spread(values: dict[str, dict[str, float]]) -> dict[str, Any]:
    """A figure's mean over every (phrasing, seed) value, its min-max, its standard deviation,
    and the values themselves (``{phrasing: {seed: value}}``)."""
    flat = [v for by_seed in values.values() for v in by_seed.values()]
    return {
        "mean": statistics.fmean(flat),
        "min": min(flat),
        "max": max(flat),
        "std": statistics.stdev(flat) if len(flat) > 1 else 0.0,
        "values": values,
    }


def run_suite(
    suite: Suite,
    bench: Any,
    seeds: Sequence[int],
    matches: int | None,
    measured: str,
    phrasings: Sequence[str] = (DEFAULT_PHRASING,),
    held_out: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The report of ``suite`` on the bench's policy, once per phrasing: every figure with
    its spread over seeds and phrasings; each phrasing ``held_out`` (default: the suite's
    own) reported apart, with its gap to that pooled mean."""
    matches = suite.matches if matches is None else matches
    held_out = list(getattr(suite, "held_out", ()) if held_out is None else held_out)
    check_settings(seeds, matches, phrasings, held_out)
    every = [*phrasings, *held_out]
    started = time.perf_counter()
    values: dict[str, dict[str, dict[str, float]]] = {}
    for phrasing in every:
        bench.phrasing = phrasing
        for name, per_seed in suite.run(bench, list(seeds), matches).items():
            by_seed = dict(zip(map(str, seeds), per_seed, strict=True))
            values.setdefault(name, {})[phrasing] = by_seed
    pooled = {
        name: {p: v for p, v in by_phrasing.items() if p in phrasings}
        for name, by_phrasing in values.items()
    }
    report = {
        "suite": suite.name,
        "measured": measured,
        "games": list(suite.games),
        "seeds": list(seeds),
        "phrasings": list(phrasings),
        "matches": matches,
        "figures": {name: spread(by) for name, by in pooled.items() if by},
        "notes": list(getattr(bench, "notes", [])),
        "seconds": round(time.perf_counter() - started, 1),
    }
    if held_out:
        report["held_out"] = {
            phrasing: held_out_figures(values, report["figures"], phrasing) for phrasing in held_out
        }
    return report


def check_settings(
    seeds: Sequence[int], matches: int, phrasings: Sequence[str], held_out: Sequence[str]
) -> None:
    """The suite's settings, refused with their fix (`cmd_suite` asks before the policy loads)."""
    if matches < 2:
        raise ConfigError(f"--matches {matches}: a suite plays both seats; give at least 2.")
    if not seeds:
        raise ConfigError("--seeds: give at least one seed.")
    every = [*phrasings, *held_out]
    if not phrasings or len(set(every)) != len(every):
        raise ConfigError(
            f"--phrasings {' '.join(phrasings)} --held-out {' '.join(held_out) or '(none)'}: "
            "name each phrasing once, and hold out only one that is not pooled."
        )


def held_out_figures(
    values: dict[str, dict[str, dict[str, float]]], pooled: dict[str, Any], phrasing: str
) -> dict[str, Any]:
    """Each figure under ``phrasing`` alone, with its ``gap``: the pooled mean minus its own
    (positive where the pooled phrasings score higher)."""
    figures = {}
    for name, by_phrasing in values.items():
        if phrasing not in by_phrasing:
            continue
        figure = spread({phrasing: by_phrasing[phrasing]})
        if name in pooled:
            figure["gap"] = pooled[name]["mean"] - figure["mean"]
        figures[name] = figure
    return figures


def load_policy(args: argparse.Namespace) -> tuple[Policy, float, str, Any, Path | None]:
    """(policy, sampling temperature, what it is, the run's config or None, the run folder or
    None) from a run/checkpoint folder or --model. A served model (``openai:URL#MODEL``)
    plays through its endpoint; with a run folder too, under that run's settings (its game
    options, its temperature), as the run folder itself would be measured."""
    from selfplay.api.sampler import is_served

    served = args.model is not None and is_served(args.model)
    if (args.source is None) == (args.model is None) and not (served and args.source):
        raise ConfigError(
            "Name one policy: a run folder or checkpoint folder (selfplay eval --suite solver "
            "runs/NAME), or a model (--model tiny); a run folder goes with --model only when "
            "the model is its served copy (--model openai:URL#MODEL)."
        )
    if served:
        from selfplay.core.models.served.policy import ServedPolicy, ServedSpec

        config = None
        if args.source is not None:
            from selfplay.core.commands.play import find_checkpoint, run_config

            config = run_config(find_checkpoint(Path(args.source))[0])
        temperature = 1.0 if config is None else config.generation.temperature
        seed = 0 if config is None else config.seed
        spec = ServedSpec.parse(args.model, "--model")
        policy = ServedPolicy(spec, max_new_tokens=None, temperature=temperature, seed=seed)
        policy.check_model()  # a wrong name or a dead server named before any match
        return policy, temperature, f"model {args.model}", config, None
    if args.model is not None:
        from selfplay.core.config import RunConfig
        from selfplay.core.plan.build import build_learner

        config = RunConfig(model=args.model)
        policy = build_learner(config)
        if getattr(policy, "model", None) is not None:
            policy.model.eval()
        return policy, config.generation.temperature, f"model {args.model}", None, None
    from selfplay.core.commands.play import find_checkpoint, load_checkpoint_policy

    folder, found = find_checkpoint(Path(args.source))
    loaded = load_checkpoint_policy(Path(args.source), args.learner)
    temperature = loaded.config.generation.temperature
    return loaded.policy, temperature, str(found), loaded.config, folder


def saved_path(run_folder: Path, suite: str, learner: str | None = None) -> Path:
    """Where a run folder keeps ``suite``'s report: ``suites/NAME.json`` (``NAME.LEARNER.json``
    for one learner of several)."""
    return run_folder / SAVED / (f"{suite}.{learner}.json" if learner else f"{suite}.json")


def saved_reports(run_folder: Path) -> list[dict[str, Any]]:
    """The suite reports saved in ``run_folder``, by file name, each with its ``learner`` (of
    ``NAME.LEARNER.json``; None for the shared policy); unreadable ones are skipped."""
    reports = []
    for path in sorted((run_folder / SAVED).glob("*.json")):
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(report, dict) and isinstance(report.get("figures"), dict):
            named = path.stem.removeprefix(f"{report.get('suite')}.")
            report.setdefault("learner", None if named == path.stem else named)
            reports.append(report)
    return reports


def cmd_suite(args: argparse.Namespace) -> int:
    if args.suite is None:
        raise ConfigError(
            "Name what to measure: a run folder or checkpoint (selfplay eval runs/NAME), or a "
            "suite with its policy (selfplay eval --suite solver --model tiny)."
        )
    suite = find_suite(args.suite)
    held = args.held_out if args.held_out is not None else list(getattr(suite, "held_out", ()))
    # the settings are refused before the policy loads and any match is played
    matches = suite.matches if args.matches is None else args.matches
    check_settings(args.seeds, matches, args.phrasings, held)
    check_phrasings(suite, [*args.phrasings, *held])
    if args.traces is not None:
        from selfplay.core.commands.traces import TraceWriter, trace_folder

        trace_folder(args.traces, suite.name, [*args.phrasings, *held])
    policy, temperature, measured, config, folder = load_policy(args)
    bench = HostBench(policy, temperature, config=config, say=say)
    if args.traces is not None:
        bench.traces = TraceWriter(args.traces, suite.name, measured)
    apart = f", held out {' '.join(held)}" if held else ""
    say(f"suite {suite.name}: {measured}, phrasings {' '.join(args.phrasings)}{apart}")
    report = run_suite(suite, bench, args.seeds, args.matches, measured, args.phrasings, held)
    if folder is not None:
        path = saved_path(folder, suite.name, args.learner)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2) + "\n")
        say(f"saved in {path}")
    if bench.traces is not None:
        say(f"traces: {bench.traces.count} matches in {args.traces / suite.name}")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        from selfplay.core.commands.show import ReaderConsole

        console = ReaderConsole()
        console.print(suite_table(report))
        for phrasing in report.get("held_out", {}):
            console.print(held_out_table(report, phrasing))
    return 0


def say(line: str) -> None:
    """Progress on stderr, so that --json's output stays one JSON document."""
    print(line, file=sys.stderr, flush=True)


def suite_table(report: dict[str, Any]) -> Any:
    from rich.table import Table

    seeds = " ".join(str(s) for s in report["seeds"])
    phrasings = " ".join(report.get("phrasings", [DEFAULT_PHRASING]))
    title = (
        f"suite {report['suite']}: {report['measured']} (seeds {seeds}, phrasings "
        f"{phrasings}, {report['matches']} matches each, {report['seconds']:.0f} s)"
    )
    notes = report.get("notes") or []
    table = Table(title=title, caption="\n".join(f"note: {n}" for n in notes) or None)
    for column in ("figure", "mean", "min – max", "std"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for name, figure in report["figures"].items():
        low_high = f"{figure['min']:.3f} – {figure['max']:.3f}"
        table.add_row(name, f"{figure['mean']:.3f}", low_high, f"{figure['std']:.3f}")
    return table


def held_out_table(report: dict[str, Any], phrasing: str) -> Any:
    from rich.table import Table

    pooled = " ".join(report.get("phrasings", [DEFAULT_PHRASING]))
    table = Table(title=f"held out: {phrasing} (gap = mean under {pooled} minus under {phrasing})")
    for column in ("figure", "mean", "min – max", "std", "gap"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for name, figure in report["held_out"][phrasing].items():
        low_high = f"{figure['min']:.3f} – {figure['max']:.3f}"
        gap = f"{figure['gap']:+.3f}" if "gap" in figure else ""
        table.add_row(name, f"{figure['mean']:.3f}", low_high, f"{figure['std']:.3f}", gap)
    return table
