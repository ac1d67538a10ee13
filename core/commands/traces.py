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
        return _first_is_trace(path)
    if path.is_dir() and not (path / "config.yaml").exists():
        return any(_first_is_trace(p) for p in sorted(path.rglob("*.jsonl")))
    return False


def _first_is_trace(path: Path) -> bool:
    try:
        with path.open() as f:
            first = f.readline()
        return json.loads(first).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def read_traces(path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every trace in a trace file, or in every trace file under a folder, with its file."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*.jsonl"))
    for file in files:
        if not _first_is_trace(file):
            continue
        with file.open() as f:
            for line in f:
                if line.strip():
                    yield file, json.loads(line)


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
