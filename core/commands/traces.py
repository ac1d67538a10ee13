"""Match traces of the evaluation suites, in the form OpenSpiel 2.0 records a game played.

OpenSpiel 2.0 (open_spiel#1340, #1566) describes a match trace for leaderboards: a record of
a game played, with the agents' names and other metadata, and its states as JSON structs.
Its 2.0.x releases ship the parts (the game string ``pyspiel.load_game`` reads, integer
actions, ``action_to_string``, ``State.to_json`` for the games with state structs), not a
writer, so this is one built from them. ``selfplay eval --suite NAME --traces DIR`` writes
every match a suite plays to ``DIR/SUITE/PHRASING.jsonl``, one JSON object a line:

    {"format": "open_spiel.match_trace", "version": 1,
     "game": "tic_tac_toe()",                    OpenSpiel's game string
     "agents": ["checkpoint iter-000040", "scripted:minimax"],     by OpenSpiel player
     "metadata": {"suite", "phrasing", "seed", "match", "opponent", "measured",
                  "selfplay_game", "game_options", "roles"},
     "history": [4, 0, 8, ...],                  every action, chance outcomes included:
                                                 replays in OpenSpiel from its initial state
     "steps": [{"player": 0, "action": 4, "action_string": "x(1,1)",
                "state": {...},                  the StateStruct before the move, where the
                                                 game has one (tic_tac_toe, connect_four)
                "role", "seat", "prompt": [{"role", "content"}], "answer": "the raw reply",
                "valid": true}, ...],            chance steps have player -1 and no prompt;
                                                 an invalid answer is a step with action null
     "returns": [1.0, -1.0],                     the payoffs, ours: a forfeit ends a match
     "terminal": true, "forfeit": null}          before OpenSpiel would (terminal false)

Our ``tictactoe`` and ``kuhn-poker`` are written as OpenSpiel's ``tic_tac_toe`` and
``kuhn_poker`` (the same games: cells are actions 0-8; the deal is chance's two actions, then
pass 0 and bet 1), every ``openspiel:`` game as itself (a game must offer `SpielMatch`).
Action strings and states need the OpenSpiel extra; without it the integers are written.
`selfplay show` reads the files back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.tasks import SpielMatch
from selfplay.api.types import Episode, Role, Turn

FORMAT, VERSION = "open_spiel.match_trace", 1


class TraceWriter:
    """Appends each match a suite plays to ``folder/SUITE/PHRASING.jsonl``."""

    def __init__(self, folder: Path, suite: str, measured: str) -> None:
        self.folder, self.suite, self.measured = Path(folder), suite, measured
        self.count = 0
        self.written: set[Path] = set()

    def write(
        self,
        game: Any,
        played: Sequence[tuple[Role, Episode]],
        opponent: str,
        seed: int,
        phrasing: str,
    ) -> None:
        if not isinstance(game, SpielMatch):
            raise ConfigError(
                f"--traces: {game.name} has no OpenSpiel form (it does not offer SpielMatch), "
                "so its matches cannot be written as OpenSpiel traces; drop --traces."
            )
        path = self.folder / self.suite / f"{phrasing}.jsonl"
        if path not in self.written:  # a new measurement replaces the last one's file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
            self.written.add(path)
        with path.open("a") as out:
            for k, (role, episode) in enumerate(played):
                meta = {
                    "suite": self.suite,
                    "phrasing": phrasing,
                    "seed": seed,
                    "match": k,
                    "opponent": opponent,
                    "measured": self.measured,
                    "measured_role": role,
                }
                out.write(json.dumps(trace_of(game, episode, meta), ensure_ascii=False) + "\n")
                self.count += 1


def trace_folder(folder: Path, suite: str, phrasings: Sequence[str]) -> Path:
    """``folder/SUITE``, made before the policy loads: a ``--traces`` that names a file, lies
    under one or cannot be written is refused while nothing has been played."""
    target = Path(folder) / suite
    found = next(p for p in (target, *target.parents) if p.exists())
    if not found.is_dir():
        raise ConfigError(
            f"--traces {folder}: {found} is a file, not a folder; --traces names a folder "
            f"(made if missing) that gets {suite}/PHRASING.jsonl: pass e.g. --traces traces/."
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"--traces {folder}: cannot make {target} ({err.strerror or err}); "
            "pass a folder you can write to."
        ) from None
    if not os.access(target, os.W_OK):
        raise ConfigError(
            f"--traces {folder}: {target} is read-only; pass a folder you can write to."
        )
    for phrasing in phrasings:
        file = target / f"{phrasing}.jsonl"
        if file.exists() and not file.is_file():
            raise ConfigError(
                f"--traces {folder}: {file} is a folder, where the {phrasing} traces go; "
                "move it away or pass another --traces folder."
            )
    return target


def trace_of(game: Any, episode: Episode, metadata: dict[str, Any]) -> dict[str, Any]:
    """``episode`` as an OpenSpiel match trace (see the module doc)."""
    actions = game.spiel_actions(episode)
    turns = list(episode.turns)
    spiel = _loaded(game.spiel_game())
    position = spiel.new_initial_state() if spiel is not None else None
    steps: list[dict[str, Any]] = []
    for player, action in actions:
        if player >= 0:  # the invalid attempts before this move, then the move
            while turns and not turns[0].valid:
                steps.append(_turn_step(turns.pop(0), game, None))
            step = _turn_step(turns.pop(0), game, action) if turns else {"player": player}
        else:
            step = {"player": -1, "action": action}
        step["player"] = player
        if position is not None:
            step["action_string"] = position.action_to_string(player, action)
            if player >= 0 and hasattr(spiel, "StateStruct"):
                step["state"] = json.loads(position.to_json())
            position.apply_action(action)
        steps.append(step)
    steps += [_turn_step(turn, game, None) for turn in turns]  # a forfeit's last attempts
    roles = list(game.roles)
    return {
        "format": FORMAT,
        "version": VERSION,
        "game": game.spiel_game(),
        "agents": [episode.seats[r] for r in roles],
        "metadata": {
            **metadata,
            "selfplay_game": episode.game,
            "game_options": episode.options,
            "roles": roles,
            "episode_seed": episode.seed,
        },
        "history": [action for _, action in actions],
        "steps": steps,
        "returns": [episode.outcome[r] for r in roles],
        "terminal": episode.state.get("forfeit") is None,
        "forfeit": episode.state.get("forfeit"),
    }


def _turn_step(turn: Turn, game: Any, action: int | None) -> dict[str, Any]:
    return {
        "player": list(game.roles).index(turn.role),
        "action": action,
        "role": turn.role,
        "seat": turn.seat,
        "prompt": [m.as_dict() for m in turn.prompt],
        "answer": turn.text,
        "move": turn.action,
        "valid": turn.valid,
        **({} if turn.valid else {"reason": turn.reason}),
    }


def _loaded(name: str) -> Any:
    try:
        import pyspiel
    except ImportError:  # the extra is not installed: integers only
        return None
    return pyspiel.load_game(name)


# ---- reading them back (`selfplay show`) ---------------------------------------------------------


def is_trace_source(path: Path) -> bool:
    """Whether ``path`` is a trace file or a folder of them (not a run folder)."""
    path = Path(path)
    if path.is_file():
        return not_a_trace(path) is None
    if path.is_dir() and not (path / "config.yaml").exists():
        return any(not_a_trace(p) is None for p in _jsonl(path))
    return False


def not_a_trace(path: Path) -> str | None:
    """Why file ``path`` holds no match traces, judged by its first line (None: it does)."""
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline()
    except (OSError, UnicodeDecodeError) as err:
        return f"it cannot be read as text: {getattr(err, 'strerror', None) or err}"
    if not first.strip():
        return "it is empty"
    try:
        head = json.loads(first)
    except ValueError:
        return "its first line is not JSON"
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        return f'its first line is JSON without "format": "{FORMAT}"'
    return None


def no_traces(path: Path) -> str:
    """What ``path``, neither a run folder nor match traces, is instead: for the refusal."""
    path = Path(path)
    if not path.exists():
        return f"{path} does not exist"
    if path.is_file():
        return f"{path} is a file but not match traces ({not_a_trace(path)})"
    files = _jsonl(path)
    if not files:
        empty = not any(path.iterdir())
        return (
            f"{path} is {'an empty folder' if empty else 'a folder'}: not a run folder (no "
            "config.yaml) and holds no match traces (no .jsonl file)"
        )
    return (
        f"{path} is not a run folder (no config.yaml), and no .jsonl file in it is a match "
        f"trace ({files[0]}: {not_a_trace(files[0])})"
    )


def _jsonl(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.jsonl") if p.is_file())


def read_traces(path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every trace in a trace file, or in every trace file under a folder, with its file. A
    last line cut short is read past with a warning; any other line that is not a trace is a
    ConfigError naming its file and line (core/run/folder/episode_log.py, `damaged`)."""
    from selfplay.core.run.folder.episode_log import damaged

    path = Path(path)
    files = [path] if path.is_file() else _jsonl(path)
    for file in files:
        if not_a_trace(file) is not None:
            continue
        with file.open(encoding="utf-8") as f:
            for index, line in enumerate(f):
                if not line.strip():
                    continue
                try:
                    trace = json.loads(line)
                    episode_of(trace)
                except (ValueError, KeyError, TypeError, AttributeError) as err:
                    damaged(file, index, line, "a match trace", err)
                    continue
                yield file, trace


def episode_of(trace: dict[str, Any]) -> Episode:
    """The match a trace records, as an episode (its turns: the steps with a prompt)."""
    meta = trace["metadata"]
    roles = meta["roles"]
    turns = tuple(
        Turn.from_dict(
            {
                "role": s["role"],
                "seat": s["seat"],
                "prompt": s["prompt"],
                "text": s["answer"],
                "action": s.get("move"),
                "valid": s["valid"],
                "reason": s.get("reason"),
            }
        )
        for s in trace["steps"]
        if "prompt" in s
    )
    return Episode(
        game=meta["selfplay_game"],
        seed=meta.get("episode_seed", meta["seed"]),
        seats=dict(zip(roles, trace["agents"], strict=True)),
        turns=turns,
        outcome=dict(zip(roles, trace["returns"], strict=True)),
        options=meta.get("game_options", {}),
        state={"forfeit": trace.get("forfeit")},
    )
