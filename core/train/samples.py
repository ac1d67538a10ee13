"""From finished episodes to training samples: the learner's turns and their returns.

A turn's return is its role's score (discounted by the turns of its role after it) plus its own
turn score; an invalid attempt earns ``train.invalid_reward``. Each sample carries how its turn
was sampled (`sampling`: the corrections' cap, the staleness cap, the age decay). What cannot
be trained on is screened out here: a return or advantage that is not a finite number. What
the iteration then warns of, or stops on, is in checks.py; the records the episode log keeps,
in records.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from selfplay.api.estimator import IN_PROCESS, Sample, Sampling
from selfplay.api.reward import EpisodeScores, RoleScores
from selfplay.api.tasks import ReferenceAnswers
from selfplay.api.types import Episode


def episode_samples(
    episodes: Sequence[Episode],
    scores: Sequence[EpisodeScores | RoleScores],
    learner: str,
    gamma: float = 1.0,
    invalid_reward: float | None = None,
    sampling: Sampling = IN_PROCESS,
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
                    choice_logprob=turn.choice_logprob,
                    sampling=sampling,
                )
            )
        samples.extend(reversed(mine))
    return samples


def sampling(config: Any) -> Sampling:
    """How a learner with settings ``config`` samples its turns: the importance weight's cap
    (``rollout.importance_cap``; else 2.0 when its turns are served, by another copy of the
    weights; else none), its staleness cap and, under ``rollout.stale: reweight``, the age
    decay."""
    rollout = config.rollout
    cap = rollout.importance_cap
    if cap is None and rollout.served:
        cap = 2.0
    decay = rollout.age_decay if rollout.stale == "reweight" else None
    return Sampling(importance_cap=cap, max_staleness=rollout.max_staleness, age_decay=decay)


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
