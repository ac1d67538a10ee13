"""What the run measures of its learners: each one (greedy) against the game's scripted
players in its own roles, and the held-out tasks of the learner that plays the task role.

With one shared policy the results are keyed by opponent, as `selfplay.core.evaluate.evaluate`
gives them; with several learners by ``LEARNER/OPPONENT``, so metrics.csv reads
``eval/LEARNER/OPPONENT/non_loss_rate`` and the closing table has a row per learner and
opponent.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from selfplay.api.policy import Policy
from selfplay.core.evaluate import EvalResult, evaluate
from selfplay.core.train.state import RunState


def evaluate_learners(state: RunState, told: Any) -> dict[str, EvalResult]:
    """Every learner against the scripted players of ``eval.opponents`` (its weight average,
    when the run keeps one); ``told(done, total, rounds)`` shows the progress."""
    ev, seed = state.config.eval, state.config.seed + 7919
    results: dict[str, EvalResult] = {}
    count = len(state.learners)
    for k, learner in enumerate(state.learners):

        def mine(done: int, total: int, rounds: int, k: int = k) -> None:
            """One progress over every learner's matches (each plays as many)."""
            told(k * total + done, count * total, rounds)

        with learner.updater.averaged():
            found = evaluate(
                state.game,
                learner.policy,
                opponents=ev.opponents,
                matches=ev.matches,
                seed=seed,
                progress=mine if told is not None else None,
                roles=None if state.shared else learner.roles,
            )
        if state.shared:
            return found
        for name, result in found.items():
            named = f"{learner.name}/{name}"
            results[named] = dataclasses.replace(result, opponent=named)
    return results


def task_policy(state: RunState) -> Policy:
    """The policy measured on held-out tasks: the learner of the game's task role."""
    role = getattr(state.game, "task_role", None)
    for learner in state.learners:
        if role in learner.roles:
            return learner.policy
    return state.learner
