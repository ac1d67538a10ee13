"""From finished episodes to training samples: the learner's turns and their returns.

What cannot be trained on is screened out here and counted: a return or advantage that is
not a finite number (``samples/nonfinite_dropped``), iterations in which no learner turn got
a score (the run stops after `MAX_UNSCORED`). Each match is also given its ``record`` for the
episode log: the iteration, each turn's share of every weighted reward term, and what the
rewards read (a judge's raw answers), so `selfplay show` and `selfplay export --format prm`
need nothing but episodes.jsonl.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.estimator import Sample
from selfplay.api.reward import EpisodeScores, RoleScores
from selfplay.api.sampler import is_learner
from selfplay.api.tasks import ReferenceAnswers
from selfplay.api.types import Episode


def episode_samples(
    episodes: Sequence[Episode],
    scores: Sequence[EpisodeScores | RoleScores],
    learner: str,
    gamma: float = 1.0,
    invalid_reward: float | None = None,
) -> list[Sample]:
    """Every turn the learner generated, with its return: role score plus turn score.

    A turn followed by k more turns of the same role in its match earns ``gamma**k * score``
    of its role's score (SPIRAL's per-turn discount), plus its own turn score undiscounted
    (``scores`` may be plain role scores, with no turn scores). An invalid attempt earns
    ``invalid_reward`` instead of the role part, when given: with retries allowed, an invalid
    attempt followed by a win must not be reinforced. A turn whose role score and turn score
    are both None (no reward applies) and turns without generated tokens (scripted seats)
    yield no sample. Each sample records its match's position in ``episodes`` and its return
    split by reward term (``Sample.parts``), which LSP's challenger advantage needs.
    """
    samples: list[Sample] = []
    for index, (episode, scored) in enumerate(zip(episodes, scores, strict=True)):
        if not isinstance(scored, EpisodeScores):
            scored = EpisodeScores(scored, (None,) * len(episode.turns))
        mine: list[Sample] = []
        later: dict[str, int] = {}
        for i in reversed(range(len(episode.turns))):
            turn, turn_score = episode.turns[i], scored.turns[i]
            k = later.get(turn.role, 0)
            later[turn.role] = k + 1
            score = scored.roles.get(turn.role)
            if turn.seat != learner or not turn.token_ids:
                continue
            if score is None and turn_score is None:
                continue
            penalty = None
            if invalid_reward is not None and not turn.valid:
                penalty = score = float(invalid_reward)
                gamma_k = 1.0
            else:
                gamma_k = gamma**k
            mine.append(
                Sample(
                    game=episode.game,
                    role=turn.role,
                    prompt_ids=turn.prompt_ids,
                    token_ids=turn.token_ids,
                    logprobs=turn.logprobs,
                    reward=(0.0 if score is None else float(score) * gamma_k) + (turn_score or 0.0),
                    group=turn.prompt_ids,
                    valid=turn.valid,
                    episode=index,
                    parts=_parts(scored, turn.role, i, gamma_k, penalty),
                    opponent=_opponents(episode, turn.role),
                    turn=i,
                    menu=turn.menu,
                )
            )
        samples.extend(reversed(mine))
    return samples


def _parts(
    scored: EpisodeScores, role: str, index: int, discount: float, penalty: float | None
) -> dict[str, float]:
    """Turn ``index``'s return split by reward term, computed like the return itself."""
    parts: dict[str, float] = {}
    for label, part in scored.parts.items():
        role_score = None if penalty is not None else part.roles.get(role)
        turn_score = part.turns[index]
        if role_score is None and turn_score is None:
            continue
        parts[label] = (0.0 if role_score is None else role_score * discount) + (turn_score or 0.0)
    if penalty is not None and scored.parts:
        parts["invalid"] = penalty
    return parts


def finite_samples(samples: Sequence[Sample]) -> tuple[list[Sample], list[Sample]]:
    """(the samples whose return is a finite number, the others).

    One NaN or infinite score (a reward's bug, an overflow) must never reach the estimator:
    its baselines would carry it into every later advantage and into every checkpoint.
    """
    kept: list[Sample] = []
    dropped: list[Sample] = []
    for sample in samples:
        finite = math.isfinite(sample.reward)
        finite = finite and all(math.isfinite(v) for v in sample.parts.values())
        (kept if finite else dropped).append(sample)
    return kept, dropped


def finite_advantages(advantages: Sequence[float | None]) -> tuple[list[float | None], int]:
    """Advantages with every non-finite one dropped (None), and how many were."""
    kept = [a if a is None or math.isfinite(a) else None for a in advantages]
    return kept, sum(1 for a in advantages if a is not None and not math.isfinite(a))


def _opponents(episode: Episode, role: str) -> str:
    """The holders of the match's other seats, e.g. ``scripted:minimax``, sorted."""
    return "+".join(sorted(holder for r, holder in episode.seats.items() if r != role))


def advantage_metrics(advantages: Sequence[float | None] | None) -> dict[str, float]:
    """``advantage_mean``: the mean of the advantages kept (none when nothing estimated)."""
    if advantages is None:
        return {}
    kept = [a for a in advantages if a is not None]
    return {"advantage_mean": sum(kept) / max(len(kept), 1)}


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


def invalid_return(config: Any) -> float:
    """The return of an invalid attempt: ``train.invalid_reward``, else the forfeit penalty."""
    chosen = config.train.invalid_reward
    return config.invalid_moves.penalty if chosen is None else chosen


def answer_encoder(learner: Any) -> Callable[[str], tuple[int, ...]] | None:
    """Text -> answer token ids ending with end-of-sequence, in the learner's tokenizer.

    For answers the learner did not write (a reference answer), scored like a sample.
    """
    tokenizer = getattr(learner, "tokenizer", None)
    if tokenizer is None:
        return None
    from selfplay.core.models.scoring import eos_id

    stop = eos_id(learner)

    def encode(text: str) -> tuple[int, ...]:
        return (*tokenizer(text, add_special_tokens=False)["input_ids"], stop)

    return encode


def reference_answers(game: Any, episodes: Sequence[Episode]) -> Callable[[Sample], Any] | None:
    """``sample -> the game's reference answer to its task``, for games that know one."""
    if not isinstance(game, ReferenceAnswers):
        return None

    def reference(sample: Sample) -> str | None:
        state = game.State.model_validate(episodes[sample.episode].state)
        return game.reference_answer(state, sample.role)

    return reference


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
                f'"Score: N" — judge with a larger model (reward_options.{term}.model, e.g. '
                "--model smollm2-135m with model=learner) or use another reward"
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
            '("Score: N"); the tiny model cannot: judge with a larger one.'
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


# ---- the records the episode log keeps -------------------------------------------------


def with_record(
    episode: Episode,
    scored: EpisodeScores | None,
    notes: dict[str, list[dict[str, Any]]] | None,
    iteration: int,
) -> Episode:
    """``episode`` with its ``record``: iteration, reward parts per turn and per role, notes."""
    record: dict[str, Any] = {"iteration": iteration}
    if scored is not None:
        turns = []
        for i, turn in enumerate(episode.turns):
            parts = {}
            for label, part in scored.parts.items():
                value = _plus(part.roles.get(turn.role), part.turns[i])
                if value is not None:
                    parts[label] = value
            turns.append(parts)
        roles = {role: _json_number(v) for role, v in scored.totals(episode).items()}
        record["rewards"] = {"roles": roles, "turns": turns}
    if notes:
        record["notes"] = notes
    return dataclasses.replace(episode, record=record)


def recorded(
    played: list[Episode],
    scored: list[Episode],
    scores: list[EpisodeScores],
    notes: list[dict[str, list[dict[str, Any]]]],
    iteration: int,
) -> list[Episode]:
    """The matches ``played`` with their records; ``scored`` (what the callbacks kept, in
    the order of ``scores`` and ``notes``) gives their scores, a dropped match has none."""
    where = {id(ep): k for k, ep in enumerate(scored)}
    out = []
    for episode in played:
        k = where.get(id(episode))
        score = None if k is None else scores[k]
        note = None if k is None or k >= len(notes) else notes[k]
        out.append(with_record(episode, score, note, iteration))
    return out


def _plus(a: float | None, b: float | None) -> float | None:
    if a is None and b is None:
        return None
    return _json_number((a or 0.0) + (b or 0.0))


def _json_number(value: float | None) -> float | str | None:
    """JSON has no NaN or infinity: those are written as text ("nan", "inf")."""
    if value is None or math.isfinite(value):
        return value
    return str(value)
