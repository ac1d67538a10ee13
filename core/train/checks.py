"""What the iteration warns of, or stops on, in the samples it made.

What cannot be trained on is counted and said: a return or advantage that is not a finite
number (``samples/nonfinite_dropped``), an iteration whose advantages are all 0, a judge whose
every answer was unreadable, iterations in which no learner turn got a score (the run stops
after `MAX_UNSCORED`), and a run that trained on nothing (said at its end). Counts are summed
over every process, so every process agrees.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.sampler import is_learner
from selfplay.api.types import Episode


def flat_advantages(
    iteration: int,
    advantages: Sequence[float | None] | None,
    reduce: Callable[[Any], Any],
    say: Callable[[str], None],
) -> None:
    """Say so when every sample of an iteration has advantage 0: the rewards tell its samples
    nothing apart (every judge answer masked but one score shared by all, a group whose
    answers all scored alike), so the policy gradient is zero and the run would learn
    nothing while looking busy. Counted over every process, so every process agrees."""
    import torch

    if advantages is None:
        return
    kept = [a for a in advantages if a is not None]
    counted = reduce(torch.tensor([len(kept), sum(a != 0 for a in kept)], dtype=torch.float64))
    samples, moving = (int(x) for x in counted.tolist())
    if samples and not moving:
        say(
            f"[yellow]iteration {iteration}: all {samples} samples have advantage 0 (their "
            "rewards do not tell them apart, or every score was masked), so the policy "
            "gradient is zero and nothing is learned from this iteration's rewards; "
            "docs/troubleshooting.md says what to change.[/yellow]"
        )


def unreadable_terms(iteration: int, row: dict[str, Any], say: Callable[[str], None]) -> None:
    """Say so when every answer of a judge-like reward term was unreadable this iteration:
    its scores are masked, so that term taught nothing, whatever the other terms did."""
    for key, asked in row.items():
        if not (key.startswith("reward/") and key.endswith("/asked")) or not asked:
            continue
        term = key.split("/")[1]
        if row.get(f"reward/{term}/unparsable") == asked:
            say(
                f"[yellow]iteration {iteration}: every {term} answer was unreadable "
                f"({int(asked)} of {int(asked)}), so the {term} term scored nothing; `selfplay "
                "show RUN_DIR --unreadable` shows them.[/yellow]"
            )


MAX_UNSCORED = 3


class NothingToLearn(ConfigError):
    """Several iterations in a row gave no learner turn a score: the run cannot learn."""


def unscored_message(iteration: int, streak: int, reward: Any) -> str:
    """Why nothing was scored, from the rewards' counters (unreadable judge answers)."""
    metrics = reward.metrics()
    reasons = []
    for key, asked in metrics.items():
        if key.endswith("/asked") and asked:
            unreadable = metrics.get(key.replace("/asked", "/unparsable"), 0)
            term = key.split("/")[1]
            reasons.append(
                f"{int(unreadable)} of {int(asked)} {term} answers were unreadable "
                f"(reward/{term}/unparsable): that judge model does not answer in the form "
                f'"Score: N" — let it choose its verdict line instead of writing it '
                f"(--set reward_options.{term}.answer=choose), judge with a larger model "
                f"(reward_options.{term}.model, e.g. --model smollm2-135m with model=learner) "
                "or use another reward"
            )
    why = "; ".join(reasons) or "every reward gave None (does not apply) to every learner turn"
    return (
        f"Iteration {iteration}: no learner turn got a score in {streak} iterations in a row, "
        f"so nothing can be learned: {why}. Stopping; the matches are in episodes.jsonl."
    )


def untrained_message(rows: Sequence[dict[str, Any]], folder: Any) -> str | None:
    """What to say at the end of a run that trained on nothing (None when it trained)."""
    # update_steps, or NAME/update_steps for each of several learners
    steps = [key for key in rows[0] if key.split("/")[-1] == "update_steps"] if rows else []
    if not steps or any(row.get(key) for row in rows for key in steps):
        return None
    totals: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith("reward/") and key.endswith("/asked"):
                term = key.split("/")[1]
                unreadable = row.get(f"reward/{term}/unparsable", 0) or 0
                counts = totals.setdefault(term, [0.0, 0.0])
                counts[0], counts[1] = counts[0] + (value or 0), counts[1] + unreadable
    show = f"`selfplay show {folder}`" if folder else "`selfplay show RUN_DIR`"
    if totals and all(asked and asked == bad for asked, bad in totals.values()):
        counts = ", ".join(f"{t} {int(b)} of {int(a)}" for t, (a, b) in totals.items())
        return (
            f"0 samples trained: every judge answer was unreadable ({counts}) — see "
            f"{show[:-1]} --unreadable`. A judge model must answer in the asked form "
            '("Score: N"); the tiny model cannot: let the judge choose its verdict line '
            "(reward_options.NAME.answer=choose) or judge with a larger model."
        )
    if cause := _nothing_kept(rows):
        return f"0 samples trained: {cause} — see {show}."
    return f"0 samples trained: no learner turn got a score — see {show}."


def _nothing_kept(rows: Sequence[dict[str, Any]]) -> str | None:
    """Why an objective that keeps or pairs samples (sft, dpo) trained on none of them."""

    def total(key: str) -> int:
        return int(sum(float(r.get(key) or 0) for r in rows))

    if any("sft/kept" in r for r in rows) and not total("sft/kept"):
        return (
            "turns were scored, but the sft objective kept none of them (objective_options.keep: "
            "pass keeps returns above threshold, 0 by default; no answer passed). Lower "
            "objective_options.threshold, keep the best with keep=top-k, or start from a "
            "longer cold start"
        )
    if any("pairs/formed" in r for r in rows) and not total("pairs/formed"):
        counts = ", ".join(
            f"{total(f'pairs/{k}')} {what}"
            for k, what in (
                ("ties", "prompts whose answers all scored the same"),
                ("singletons", "with one answer"),
                ("below_margin", "apart by less than the margin"),
            )
        )
        return (
            f"turns were scored, but the dpo objective formed no preference pair ({counts}). "
            "Give each prompt more answers (game_options.answers), a reward that tells them "
            "apart, or a smaller objective_options.margin"
        )
    return None


def check_scored(
    iteration: int,
    episodes: Sequence[Episode],
    samples: Sequence[Sample],
    streak: int,
    reduce: Callable[[Any], Any],
    reward: Any,
) -> int:
    """The new streak of iterations in which no learner turn was scored; stops at MAX_UNSCORED.

    That happens when every score is None: a judge that cannot answer in the asked form (the
    tiny model writes no "Score: N"), a reward whose role the learner never plays. Counted
    over every process (``reduce``, a tensor sum), so every process stops together.
    """
    import torch

    turns = sum(1 for ep in episodes for t in ep.turns if is_learner(t.seat) and t.token_ids)
    counted = reduce(torch.tensor([len(samples), turns], dtype=torch.float64)).tolist()
    streak = streak + 1 if counted[1] and not counted[0] else 0
    if streak >= MAX_UNSCORED:
        raise NothingToLearn(unscored_message(iteration, streak, reward))
    return streak


def nonfinite(
    iteration: int,
    dropped: Sequence[Sample],
    advantages: int,
    reduce: Callable[[Any], Any],
    say: Callable[[str], None],
) -> dict[str, float]:
    """``samples/nonfinite_dropped`` of the iteration (all processes), with a warning."""
    import torch

    terms = sorted({k for s in dropped for k, v in s.parts.items() if not math.isfinite(v)})
    count = int(reduce(torch.tensor([len(dropped) + advantages], dtype=torch.float64)).item())
    if count:
        where = f" (reward terms: {', '.join(terms)})" if terms else ""
        say(
            f"warning: iteration {iteration}: dropped {count} samples whose return or "
            f"advantage is not a finite number{where}; see samples/nonfinite_dropped."
        )
    return {"samples/nonfinite_dropped": count}
