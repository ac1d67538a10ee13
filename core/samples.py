"""From finished episodes to training samples: the learner's turns and their returns."""

from __future__ import annotations

from collections.abc import Sequence

from selfplay.core.algorithms.base import Sample
from selfplay.core.types import Episode
from selfplay.rewards.base import RoleScores


def episode_samples(
    episodes: Sequence[Episode],
    scores: Sequence[RoleScores],
    learner: str,
    gamma: float = 1.0,
    invalid_reward: float | None = None,
) -> list[Sample]:
    """Every turn the learner generated, with its role's score discounted from the end.

    A turn followed by k more turns of the same role in its match earns ``gamma**k * score``
    (SPIRAL's per-turn discount). An invalid attempt earns ``invalid_reward`` instead, when
    given: with retries allowed, an invalid attempt followed by a win must not be reinforced.
    Roles whose score is None (the reward does not apply) and turns without generated tokens
    (scripted seats) yield no sample.
    """
    samples: list[Sample] = []
    for episode, per_role in zip(episodes, scores, strict=True):
        mine: list[Sample] = []
        later: dict[str, int] = {}
        for turn in reversed(episode.turns):
            k = later.get(turn.role, 0)
            later[turn.role] = k + 1
            score = per_role.get(turn.role)
            if turn.seat != learner or score is None or not turn.token_ids:
                continue
            mine.append(
                Sample(
                    game=episode.game,
                    role=turn.role,
                    prompt_ids=turn.prompt_ids,
                    token_ids=turn.token_ids,
                    logprobs=turn.logprobs,
                    reward=(
                        float(invalid_reward)
                        if invalid_reward is not None and not turn.valid
                        else float(score) * gamma**k
                    ),
                    group=turn.prompt_ids,
                    valid=turn.valid,
                )
            )
        samples.extend(reversed(mine))
    return samples
