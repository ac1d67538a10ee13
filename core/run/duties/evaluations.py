"""What the run measures of its learners, as a duty: before training, every ``eval.every``
iterations (else the held-out tasks alone, for games that have them), and after training.

Each learner plays (greedy) against the game's scripted players in its own roles, and the
learner that plays the task role is measured on held-out tasks. With one shared policy the
results are keyed by opponent, as `selfplay.core.evaluate.evaluate` gives them; with several
learners by ``LEARNER/OPPONENT``, so metrics.csv reads ``eval/LEARNER/OPPONENT/non_loss_rate``
and the closing table has a row per learner and opponent. A resumed run keeps the evaluation
before training it made when it began (``RunState.progress``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from selfplay.api.policy import Policy
from selfplay.api.run_view import RunView
from selfplay.api.tasks import iteration_splits
from selfplay.api.types import Episode
from selfplay.core.evaluate import EvalResult, eval_seed, evaluate, task_metrics
from selfplay.core.models.best_of import searched_task_metrics
from selfplay.core.run.duties.duty import Duty, TrainResult
from selfplay.core.train.state import RunState


class Evaluations(Duty):
    """Fills ``result.before``/``after`` (and the held-out tasks) and the row's ``eval/*``."""

    def __init__(self, state: RunState, phase: Callable[..., Any], result: TrainResult) -> None:
        self.state, self.phase, self.result = state, phase, result

    def on_train_start(self, view: RunView) -> None:
        progress = self.state.progress
        if progress.before:  # a resumed run: measured when it began
            self.result.before = {k: EvalResult(**v) for k, v in progress.before.items()}
        else:
            self.result.before = self.evaluate()
            progress.before = {k: v.__dict__.copy() for k, v in self.result.before.items()}
            progress.before_tasks = self.task_metrics()
        self.result.tasks_before = progress.before_tasks

    def on_iteration_metrics(
        self, view: RunView, episodes: Sequence[Episode], row: dict[str, Any]
    ) -> None:
        state, every = self.state, self.state.config.eval.every
        if every and view.iteration % every == 0:
            for result in self.evaluate().values():
                row.update(result.as_metrics("eval"))
            row.update(self.task_metrics())
        elif splits := iteration_splits(state.game):  # every iteration (api/tasks.py)
            with self.phase("held-out tasks", quiet=True) as told:
                seed, limit = eval_seed(state.config.seed), state.config.eval.matches
                policy = task_policy(state)
                row.update(
                    task_metrics(state.game, policy, limit, seed, progress=told, splits=splits)
                )

    def on_train_end(self, view: RunView, result: Any) -> None:
        self.result.after, self.result.tasks_after = self.evaluate(), self.task_metrics()

    def evaluate(self) -> dict[str, EvalResult]:
        with self.phase("evaluation") as told:
            return evaluate_learners(self.state, told)

    def task_metrics(self) -> dict[str, float]:
        """Held-out accuracy of games with tasks (empty for the others), and best-of-n."""
        state, ev = self.state, self.state.config.eval
        policy, seed = task_policy(state), eval_seed(state.config.seed)
        with self.phase("held-out tasks") as told:
            return searched_task_metrics(state.game, policy, ev, seed, state.reward, told)


def evaluate_learners(state: RunState, told: Any) -> dict[str, EvalResult]:
    """Every learner against the scripted players of ``eval.opponents`` (its weight average,
    when the run keeps one); ``told(done, total, rounds)`` shows the progress."""
    ev, seed = state.config.eval, eval_seed(state.config.seed)
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
    return state.first.policy
