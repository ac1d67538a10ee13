"""`selfplay show`: read a run's matches in the terminal, turn by turn.

    selfplay show runs/NAME                          page through every match
    selfplay show runs/NAME --iteration 5-8 --role solver --invalid
    selfplay show runs/NAME --unreadable             matches a judge could not read
    selfplay show runs/NAME --learner solver         a run of several learners: one's turns
    selfplay show traces/                            the match traces of `selfplay eval
                                                     --suite NAME --traces traces/`

Each match shows who held each seat, the payoffs, and every turn: its role and seat, the last
prompt message (``--prompts`` shows them all), the text the model wrote, the action read from
it (or why it was invalid), the turn's share of every reward term, and what the judges
answered about it, with the score read from the answer or "unreadable". A folder (or file) of
match traces shows each match under its suite, phrasing and seed instead of an iteration
(core/commands/traces.py). Everything a model or a
plug-in wrote is shown with its control characters escaped, so no text acts on the terminal.

``--outcome`` is judged from the policy's side: in a run, the seat of the learner (of
``--learner``'s, with several; where the learner holds every seat, the game's first role); in
traces, the seat of the measured model. ``--role`` judges from that role's side instead.

On a terminal, one match at a time: Enter shows the next, ``p`` the previous, a number jumps
to that match, ``q`` (or end of input) quits. Piped or with ``--all``, every match is printed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from selfplay.api.errors import ConfigError
from selfplay.api.sampler import is_learner, learner_seat
from selfplay.api.types import Episode, Turn
from selfplay.api.verifier import printable

OUTCOMES = ("win", "loss", "draw")
PROMPT = "Enter: next · p: previous · NUMBER: go to · q: quit> "


class ReaderConsole(Console):
    """Output a reader may stop reading (``selfplay show RUN | head``): that ends the command,
    and main() calls it a success, where rich's own handling exits with status 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


@dataclass(frozen=True)
class Entry:
    number: int  # 1-based position in the log
    iteration: int
    episode: Episode
    label: str | None = None  # a trace's suite, phrasing and seed, shown for the iteration
    side: str | None = None  # the role the policy played: --outcome's side by default


@dataclass(frozen=True)
class Filters:
    iterations: tuple[int, int] | None = None
    role: str | None = None
    opponent: str | None = None
    outcome: str | None = None
    invalid: bool = False
    unreadable: bool = False
    seat: str | None = None  # --learner NAME: only the turns of this seat holder

    def shows(self, turn: Turn) -> bool:
        return self.role in (None, turn.role) and self.seat in (None, turn.seat)


def add_show_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "source",
        type=Path,
        metavar="RUN_DIR|TRACES",
        help="the run folder to read, or a folder (or file) of suite match traces",
    )
    add("--iteration", metavar="N|A-B", help="only iteration N, or iterations A to B")
    add("--role", help="only this role's turns (and --outcome judged from its side)")
    add("--opponent", metavar="NAME", help="only matches with a seat holder whose name has NAME")
    add(
        "--outcome",
        choices=OUTCOMES,
        help="only matches the policy won, lost or drew: the learner in a run, the measured "
        "model in traces (--role: that role's side instead)",
    )
    add("--learner", metavar="NAME", help="in a run of several learners: only NAME's turns")
    add("--invalid", action="store_true", help="only matches with an invalid move")
    add("--unreadable", action="store_true", help="only matches with an unreadable judge answer")
    add("--prompts", action="store_true", help="show every prompt message, not just the last")
    add("--all", action="store_true", help="print every match at once instead of paging")


def cmd_show(args: argparse.Namespace) -> int:
    filters = Filters(
        iterations=parse_iterations(args.iteration),
        role=args.role,
        opponent=args.opponent,
        outcome=args.outcome,
        invalid=args.invalid,
        unreadable=args.unreadable,
    )
    kind, source = read_source(args.source)
    if args.learner is not None:
        filters = replace(filters, seat=learner_filter(kind, source, args.learner))
    console = ReaderConsole(highlight=False)
    entries = select(load(kind, source, filters.iterations), filters)
    if not entries:
        console.print(Text(f"No match in {args.source} passes these filters."))
        return 0
    pages = [lambda e=e: render(e, filters, args.prompts) for e in entries]
    if args.all or not sys.stdin.isatty() or not console.is_terminal:
        for page in pages:
            console.print(page())
        return 0
    page_through(pages, console, console.input)
    return 0


def read_source(source: Path) -> tuple[str, Path]:
    """("run", its folder) or ("traces", the path): a run folder, one of its checkpoint
    folders or its episodes.jsonl; a folder or file of match traces. Anything else is
    refused, saying what it is and what `show` reads."""
    from selfplay.core.commands.traces import is_trace_source, no_traces

    source = Path(source)
    if source.parent.name == "checkpoints" and _is_run(source.parent.parent):
        return "run", source.parent.parent
    if source.name == "episodes.jsonl" and source.is_file() and _is_run(source.parent):
        return "run", source.parent
    if _is_run(source):
        return "run", source
    if is_trace_source(source):
        return "traces", source
    runs = sorted(p for p in source.glob("*") if _is_run(p)) if source.is_dir() else []
    if runs:
        raise ConfigError(
            f"{source} is not a run folder (no config.yaml) but holds run folders; pass one of "
            f"them, e.g. selfplay show {runs[-1]}"
        )
    raise ConfigError(
        f"{no_traces(source)}. `selfplay show` reads a run folder (runs/NAME), or the match "
        "traces `selfplay eval --suite NAME --traces DIR` writes (DIR, or one of its .jsonl files)."
    )


def _is_run(folder: Path) -> bool:
    return (folder / "config.yaml").is_file()


def parse_iterations(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    first, dash, last = text.partition("-")
    try:
        low = int(first)
        high = int(last) if dash else low
    except ValueError:
        raise ConfigError(
            f"--iteration {text!r} is not an iteration number or a range; "
            "pass e.g. --iteration 3 or --iteration 2-5."
        ) from None
    if low > high:
        raise ConfigError(f"--iteration {text!r} runs backwards; pass the lower number first.")
    return low, high


def learner_filter(kind: str, source: Path, learner: str) -> str:
    """The seat-holder name of learner ``learner`` of the run in ``source``; refused, naming the
    run's learners, when the run trained one shared policy or has no learner of that name, and
    for traces, which hold one measured policy's matches."""
    from selfplay.core.run.folder.run_folder import read_config

    if kind == "traces":
        raise ConfigError(
            f"--learner {learner}: {source} holds suite match traces of one measured policy, "
            "not a run's learners; drop --learner (--role shows one role's turns)."
        )
    names = list(read_config(source).learners)
    if not names:
        raise ConfigError(
            f"--learner {learner}: {source} trained one shared policy, not several learners; "
            "drop --learner (--role shows one role's turns)."
        )
    if learner not in names:
        raise ConfigError(
            f"--learner {learner!r} is not a learner of {source}; its learners: {', '.join(names)}."
        )
    return learner_seat(learner)


def load(kind: str, source: Path, iterations: tuple[int, int] | None = None) -> list[Entry]:
    """The matches of ``source`` (`read_source`), each with the role the policy played."""
    from selfplay.core.commands.traces import episode_of, read_traces
    from selfplay.core.run.folder.episode_log import episode_iteration, episodes_file, iter_numbered
    from selfplay.core.run.folder.run_folder import read_config

    if kind == "traces":
        if iterations is not None:
            raise ConfigError(
                f"--iteration: {source} holds suite match traces, which have no iterations; "
                "filter them with --role, --opponent, --outcome or --invalid."
            )
        return [
            Entry(k, 0, episode_of(trace), _trace_label(trace), _measured_role(trace))
            for k, (_, trace) in enumerate(read_traces(source), start=1)
        ]
    log = episodes_file(source)
    matches = read_config(source).matches
    return [
        Entry(k, episode_iteration(ep, line, matches), ep, side=_learner_role(ep))
        for k, (line, ep) in enumerate(iter_numbered(log), start=1)
    ]


def _learner_role(episode: Episode) -> str | None:
    """The first role a learner held (in self-play, where it holds every seat: the first)."""
    return next((r for r, holder in episode.seats.items() if is_learner(holder)), None)


def _measured_role(trace: dict[str, Any]) -> str | None:
    """The role the measured policy played (traces before ``measured_role``: the first role
    not held by a scripted player)."""
    meta = trace["metadata"]
    seats = zip(meta["roles"], trace["agents"], strict=True)
    fallback = next((r for r, agent in seats if not str(agent).startswith("scripted:")), None)
    return meta.get("measured_role", fallback)


def _trace_label(trace: dict[str, Any]) -> str:
    meta = trace["metadata"]
    return (
        f"{meta['suite']} · {meta['phrasing']} · seed {meta['seed']} · {trace['game']} · "
        f"vs {meta['opponent']}"
    )


def select(entries: Iterable[Entry], filters: Filters) -> list[Entry]:
    entries = list(entries)
    if filters.role is not None:
        roles = sorted({r for e in entries for r in e.episode.seats})
        if entries and filters.role not in roles:
            raise ConfigError(
                f"--role {filters.role!r} is not a role of this run; its roles: {', '.join(roles)}."
            )
    return [e for e in entries if _passes(e, filters)]


def _passes(entry: Entry, f: Filters) -> bool:
    ep = entry.episode
    if f.iterations and not f.iterations[0] <= entry.iteration <= f.iterations[1]:
        return False
    if f.opponent and not any(f.opponent in holder for holder in ep.seats.values()):
        return False
    if f.seat and f.seat not in ep.seats.values():
        return False
    turns = [t for t in ep.turns if f.shows(t)]
    if f.invalid and all(t.valid for t in turns):
        return False
    if f.unreadable and not any(_unreadable(n) for n in _notes(ep)):
        return False
    if not f.outcome:
        return True
    side = f.role or next((r for r, holder in ep.seats.items() if holder == f.seat), None)
    return outcome_of(ep, side or entry.side or next(iter(ep.seats))) == f.outcome


def outcome_of(episode: Episode, role: str) -> str:
    mine = episode.outcome.get(role, 0.0)
    others = [v for r, v in episode.outcome.items() if r != role]
    best = max(others, default=mine)
    return "win" if mine > best else "loss" if mine < best else "draw"


def render(entry: Entry, filters: Filters | None = None, all_prompts: bool = False) -> Text:
    ep = entry.episode
    out = Text()
    seats = ", ".join(f"{r}={h}" for r, h in ep.seats.items())
    payoffs = ", ".join(f"{r} {v:+g}" for r, v in ep.outcome.items())
    where = entry.label if entry.label else f"iteration {entry.iteration}"
    kind = "match" if entry.label else "episode"
    out.append(f"{kind} {entry.number} · {where} · ", style="bold")
    out.append(f"{ep.game} seed {ep.seed}\n", style="bold")
    out.append(_safe(f"seats: {seats}\npayoffs: {payoffs}\n"))
    rewards = ep.record.get("rewards", {})
    per_turn = rewards.get("turns") or [{}] * len(ep.turns)
    notes = ep.record.get("notes", {})
    filters = filters or Filters()
    for i, turn in enumerate(ep.turns):
        if filters.shows(turn):
            _turn(out, i, turn, per_turn[i] if i < len(per_turn) else {}, all_prompts)
            _judged(out, notes, i)
    _judged(out, notes, None)
    if not ep.record and entry.label is None:
        out.append("(written before episodes carried their rewards)\n", style="dim")
    return out


def _turn(out: Text, index: int, turn: Turn, parts: dict[str, Any], all_prompts: bool) -> None:
    mark = "valid" if turn.valid else "INVALID"
    out.append(f"\n── turn {index} · {turn.role} ({turn.seat}) · {mark}\n", style="cyan")
    prompt, prefill = turn.prompt, ""
    if prompt and prompt[-1].role == "assistant":  # the reply's start (answer_prefix)
        prompt, prefill = prompt[:-1], prompt[-1].content
    for message in prompt if all_prompts else prompt[-1:]:
        out.append(f"[{message.role}] ", style="dim")
        out.append(_safe(message.content) + "\n")
    out.append("text: ", style="bold")
    out.append(_safe(prefill), style="dim")  # the game wrote it; the policy went on from it
    out.append(_safe(turn.text) + "\n")
    if turn.valid:
        out.append(_safe(f"action: {turn.action}\n"))
    else:
        out.append(_safe(f"invalid: {turn.reason}\n"), style="red")
    if parts:
        out.append("reward: " + ", ".join(f"{k} {_number(v)}" for k, v in parts.items()) + "\n")


def _judged(out: Text, notes: dict[str, list[dict[str, Any]]], turn: int | None) -> None:
    for term, entries in notes.items():
        for note in entries:
            if note.get("turn") != turn or "answer" not in note:
                continue
            where = "the match" if turn is None else f"turn {turn}"
            read = "unreadable" if _unreadable(note) else f"read as {note['score']}"
            out.append(f"{term} on {where} ({read}): ", style="magenta")
            out.append(_safe(repr(note["answer"])) + "\n")


def _notes(episode: Episode) -> list[dict[str, Any]]:
    return [n for notes in episode.record.get("notes", {}).values() for n in notes]


def _unreadable(note: dict[str, Any]) -> bool:
    return "answer" in note and note.get("score") is None


def _number(value: Any) -> str:
    return f"{value:+.3f}" if isinstance(value, (int, float)) else str(value)


def _safe(text: str) -> str:
    return printable(text)


def page_through(
    pages: Sequence[Callable[[], Text]], console: Console, read: Callable[[str], str]
) -> None:
    """One page at a time; end of input quits like ``q``."""
    at = 0
    while True:
        console.print(pages[at]())
        console.print(Text(f"match {at + 1} of {len(pages)}", style="dim"))
        try:
            answer = read(PROMPT).strip().lower()
        except EOFError:
            return
        if answer == "q":
            return
        if answer == "p":
            at = max(at - 1, 0)
        elif answer.isdigit():
            at = min(max(int(answer) - 1, 0), len(pages) - 1)
        elif at + 1 < len(pages):
            at += 1
        else:
            return
