"""Process-reward training data from a run: every scored turn as one JSON line.

    selfplay export RUN_DIR steps.jsonl --format prm

Each line is one step of one match, as a process reward model is trained on it::

    {"prompt": [{"role": "user", "content": "..."}], "step": "the turn's text",
     "label": 0.8, "parts": {"outcome": 1.0, "judge": -0.2}, "verdict": "pass",
     "valid": true, "game": "math-solver", "seed": 7, "iteration": 3, "role": "solver",
     "turn": 0, "judge": ["Score: 8"]}

``label`` is the turn's reward: the sum of its share of every weighted reward term (its
role's score, undiscounted, plus its own turn score), as recorded in ``episodes.jsonl``;
``parts`` splits it by term. ``verdict`` is the verifier's verdict when the game keeps one
per turn (``state.verdicts``, e.g. math-solver), else null; ``judge`` holds the judges' raw
answers about this turn (or about its whole match). A turn no reward applied to has no
label and is left out (counted). Runs written before episodes carried their rewards have
nothing to export: train again (or resume) to write them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.types import Episode
from selfplay.core.run.folder.episode_log import episode_iteration, episodes_file, iter_numbered

DEFAULT_NAME = "prm.jsonl"


def export_prm(source: Path, out: Path, force: bool = False) -> tuple[Path, int, int]:
    """Write the steps of the run ``source`` to ``out``; (path, steps written, turns left out)."""
    log = episodes_file(source)
    if out.suffix != ".jsonl":
        out = out / DEFAULT_NAME
    if out.exists() and not force:
        raise ConfigError(f"{out} exists; pass another path, or --force to overwrite it.")
    matches = _matches(log.parent)
    written = skipped = 0
    recorded = False
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            for line, episode in iter_numbered(log):
                if "rewards" not in episode.record:
                    continue
                recorded = True
                for step in steps(episode, episode_iteration(episode, line, matches)):
                    if step["label"] is None:
                        skipped += 1
                        continue
                    handle.write(json.dumps(step, ensure_ascii=False) + "\n")
                    written += 1
    except BaseException:  # a damaged log line, an interrupt: no half-written file is left
        tmp.unlink(missing_ok=True)
        raise
    if not recorded:
        tmp.unlink()
        raise ConfigError(
            f"{log} holds no per-turn rewards (it was written before episodes carried them); "
            f"continue the run (selfplay run --resume {source} --iterations N) or train a new "
            "one, then export again."
        )
    tmp.replace(out)
    return out, written, skipped


def steps(episode: Episode, iteration: int) -> Iterator[dict[str, Any]]:
    """One step per turn of ``episode``, labelled by its recorded reward parts."""
    rewards = episode.record.get("rewards", {})
    per_turn = rewards.get("turns") or [{}] * len(episode.turns)
    verdicts = episode.state.get("verdicts")
    if not isinstance(verdicts, list) or len(verdicts) != len(episode.turns):
        verdicts = [None] * len(episode.turns)
    judged = _judge_answers(episode)
    for i, (turn, parts) in enumerate(zip(episode.turns, per_turn, strict=False)):
        numbers = [v for v in parts.values() if isinstance(v, (int, float))]
        yield {
            "prompt": [m.as_dict() for m in turn.prompt],
            "step": turn.text,
            "label": sum(numbers) if numbers else None,
            "parts": parts,
            "verdict": verdicts[i],
            "valid": turn.valid,
            "game": episode.game,
            "seed": episode.seed,
            "iteration": iteration,
            "role": turn.role,
            "turn": i,
            "judge": judged.get(i, []) + judged.get(None, []),
        }


def _judge_answers(episode: Episode) -> dict[int | None, list[str]]:
    answers: dict[int | None, list[str]] = {}
    for notes in episode.record.get("notes", {}).values():
        for note in notes:
            if "answer" in note:
                answers.setdefault(note.get("turn"), []).append(note["answer"])
    return answers


def _matches(folder: Path) -> int:
    from selfplay.core.run.folder.run_folder import read_config

    return read_config(folder).matches
