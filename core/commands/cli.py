"""The `selfplay` command: a thin table of sub-commands that call functions living elsewhere.

Exit codes: 0 success; 1 an unexpected error; 2 a configuration or plugin error (bad key,
unknown name, broken plugin a run needs, two plugins registering the name a run needs, a
damaged config.yaml, a resume with nothing left to train, a plug-in whose code raised during
the run); 3 training stopped after repeated non-finite losses (the last good checkpoint is
kept); 4 a checkpoint or another run-folder file could not be written or read (full disk,
read-only folder, no complete checkpoint); 5 a rollout server failed: every one stopped
answering, or one would not take the new weights (the last checkpoint is kept); 6 out of
memory (in the update or a rollout the message names the setting to lower; the last
checkpoint is kept); 130 interrupted by the user.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from selfplay import __version__
from selfplay.core.commands import scaffold
from selfplay.core.commands.export import add_export_arguments, cmd_export
from selfplay.core.commands.report import add_report_arguments, cmd_report
from selfplay.core.commands.run import add_run_arguments, cmd_run
from selfplay.core.commands.serve import add_serve_arguments, cmd_serve
from selfplay.core.commands.show import add_show_arguments, cmd_show
from selfplay.core.commands.suites import add_suite_arguments
from selfplay.core.machine.memory import OutOfMemory, stated

EXIT_OK, EXIT_ERROR, EXIT_CONFIG, EXIT_NONFINITE, EXIT_CHECKPOINT = 0, 1, 2, 3, 4
EXIT_ROLLOUT, EXIT_MEMORY, EXIT_INTERRUPTED = 5, 6, 130


def cmd_games(args: argparse.Namespace) -> int:
    from selfplay.core.commands import listing

    for family in ("textarena", "openspiel"):
        if getattr(args, family):
            names = listing.family_members(family)
            print(json.dumps(names, indent=2) if args.json else "\n".join(names))
            return EXIT_OK
    if args.json:  # every game a run can name, the families' too
        print(json.dumps(listing.games() + listing.family_rows(), indent=2, default=str))
        return EXIT_OK
    code = _listing(args, listing.games(), listing.games_table)
    from selfplay.core.commands.show import ReaderConsole

    for note in listing.family_notes():
        ReaderConsole().print(escape(note), highlight=False)
    return code


def cmd_plugins(args: argparse.Namespace) -> int:
    from selfplay.core.commands.listing import plugins, plugins_table

    return _listing(args, plugins(), plugins_table)


def cmd_recipes(args: argparse.Namespace) -> int:
    from selfplay.core.commands.listing import recipes, recipes_table

    return _listing(args, recipes(), recipes_table)


def options_listing(kind: str) -> Callable[[argparse.Namespace], int]:
    """The command that lists the plug-ins of ``kind`` with their options."""

    def command(args: argparse.Namespace) -> int:
        from selfplay.core.commands.listing import OPTION_KINDS, options_table, registered

        return _listing(
            args, registered(kind), lambda rows: options_table(OPTION_KINDS[kind], rows)
        )

    return command


def _listing(args: argparse.Namespace, rows: list, table: Callable[[list], Any]) -> int:
    """Print what a listing command found: JSON with --json, else a rich table."""
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
    else:
        from selfplay.core.commands.show import ReaderConsole

        ReaderConsole().print(table(rows))
    return EXIT_OK


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def add_games_arguments(parser: argparse.ArgumentParser) -> None:
    add_json(parser)
    parser.add_argument(
        "--textarena",
        action="store_true",
        help="list the TextArena games (textarena:<id>) the installed extra offers",
    )
    parser.add_argument(
        "--openspiel",
        action="store_true",
        help="list the OpenSpiel games (openspiel:<name>) the installed extra offers",
    )


def cmd_play(args: argparse.Namespace) -> int:
    from selfplay.core.commands.play import play_in_terminal

    play_in_terminal(
        game_name=args.game,
        source=args.source,
        opponent=args.opponent,
        role=args.role,
        seed=args.seed,
        console=Console(),
        learner=args.learner,
    )
    return EXIT_OK


def add_play_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("source", nargs="?", type=Path, metavar="RUN_DIR|CHECKPOINT", help="policy to play")
    add("--game", help="game to play; default the run's game")
    add("--as", dest="role", metavar="ROLE", help="your role; default the game's first role")
    add("--opponent", metavar="scripted:PLAYER", help="play a scripted player instead")
    add("--seed", type=int, default=0, help="seed of the match (deals, dice); default 0")
    add("--learner", metavar="NAME", help="in a run of several learners: which one")


def cmd_eval(args: argparse.Namespace) -> int:
    from selfplay.core.commands.checkpoint_eval import evaluate_checkpoint, print_report
    from selfplay.core.commands.suites import check_suite_flags, cmd_suite

    check_suite_flags(args)
    if args.suite is not None or args.model is not None or args.source is None:
        return cmd_suite(args)
    matches = 100 if args.matches is None else args.matches  # per scripted player
    report = evaluate_checkpoint(args.source, args.metric, matches, args.learner)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return EXIT_OK


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    add_json(parser)
    add = parser.add_argument
    add("source", nargs="?", type=Path, metavar="RUN_DIR|CHECKPOINT", help="policy to measure")
    add("--metric", choices=["matches", "exploitability"], default="matches")
    add("--matches", type=int, help="per scripted player and seed; default 100 (a suite's own)")
    add("--learner", metavar="NAME", help="in a run of several learners: which one")
    add_suite_arguments(parser)


COMMANDS = {
    "run": (cmd_run, "play (and train) a game by self-play", add_run_arguments),
    "games": (cmd_games, "list the games plugins provide", add_games_arguments),
    "plugins": (cmd_plugins, "list installed plugins and what they register", add_json),
    "rewards": (options_listing("rewards"), "list the rewards, with their options", add_json),
    "verifiers": (options_listing("verifiers"), "list the verifiers, with options", add_json),
    "opponents": (
        options_listing("opponent_samplers"),
        "list the opponent samplers, with options",
        add_json,
    ),
    "estimators": (
        options_listing("estimators"),
        "list the advantage estimators, with options",
        add_json,
    ),
    "objectives": (
        options_listing("objectives"),
        "list the objectives (what the update minimises), with options",
        add_json,
    ),
    "callbacks": (options_listing("callbacks"), "list the callbacks, with options", add_json),
    "recipes": (cmd_recipes, "list the named run settings (--recipe NAME)", add_json),
    "new": (
        scaffold.cmd_new,
        "create a plug-in from a template: new game|objective|reward|sampler NAME",
        scaffold.add_new_arguments,
    ),
    "eval": (cmd_eval, "measure a saved policy: matches or exploitability", add_eval_arguments),
    "play": (cmd_play, "play a game in the terminal against a checkpoint", add_play_arguments),
    "export": (
        cmd_export,
        "write a run's model as a Hugging Face folder, or its turns as PRM data",
        add_export_arguments,
    ),
    "serve": (
        cmd_serve,
        "serve a checkpoint as an OpenAI-compatible chat-completions endpoint",
        add_serve_arguments,
    ),
    "show": (cmd_show, "read a run's matches turn by turn, with filters", add_show_arguments),
    "report": (
        cmd_report,
        "write report.html: a run's curves and transcripts, or several runs compared",
        add_report_arguments,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    from selfplay.plugins.manager import registries

    parser = argparse.ArgumentParser(
        prog="selfplay", description="Train language models by self-play."
    )
    parser.add_argument("--version", action="version", version=f"selfplay {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands = dict(COMMANDS)
    for entry in registries().commands:
        command = entry.obj
        commands.setdefault(command.name, (command.run, command.help, command.add_arguments))
    for name, (func, help_text, add_arguments) in commands.items():
        child = sub.add_parser(name, help=help_text, description=help_text)
        if add_arguments:
            add_arguments(child)
        child.set_defaults(func=func)
    return parser


def _exit_code(error: Exception) -> int | None:
    """The exit code of an error we report in one line (None: a bug, shown whole); imported
    here, as their modules load torch, which `selfplay --version` and the listings never need."""
    from selfplay.api.errors import ConfigError, PluginFault
    from selfplay.core.run.folder.checkpoint import StorageError
    from selfplay.plugins.registry import PluginError, UnknownName

    if isinstance(error, (ConfigError, PluginError, PluginFault, UnknownName)):
        return EXIT_CONFIG
    if isinstance(error, StorageError):
        return EXIT_CHECKPOINT
    from selfplay.core.serving.rollout_client import RolloutFailure
    from selfplay.core.train.update.updater import NonFiniteLoss

    codes = {NonFiniteLoss: EXIT_NONFINITE, RolloutFailure: EXIT_ROLLOUT, OutOfMemory: EXIT_MEMORY}
    return next((code for kind, code in codes.items() if isinstance(error, kind)), None)


def main(argv: Sequence[str] | None = None) -> int:
    # before anything loads torch (OpenMP reads it once): see decide_threads, machine/hardware.py
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    err = Console(stderr=True)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            args = parser.parse_args(["run", *(argv or [])])
        return int(args.func(args) or EXIT_OK)
    except KeyboardInterrupt as interrupt:  # a run adds what its folder keeps (faults.py)
        err.print(escape(f"interrupted: {interrupt}" if str(interrupt) else "interrupted"))
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`selfplay show RUN | head`): not an error of ours; point
        # stdout at nothing so that Python's flush at exit does not raise again
        with contextlib.suppress(AttributeError, OSError, ValueError):  # no descriptor
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except SystemExit:  # argparse's --version, --help and usage errors
        raise
    except Exception as error:
        error = stated(error)  # an allocation that failed anywhere: exit 6, not a traceback
        code = _exit_code(error)
        if code is None:
            raise
        err.print(f"[red]error:[/red] {escape(str(error))}", highlight=False)
        return code


if __name__ == "__main__":
    sys.exit(main())
