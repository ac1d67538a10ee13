"""Best-of-n: test-time search inside a turn (seed 002's second future direction).

A `BestOfN` policy samples ``n`` answers to every request from the policy it wraps and keeps
the one a chooser prefers:

- ``verifier``: the first answer the game's own check passes (`AnswerCheck`: e.g. the math
  verifier against the task's answer), else the first answer. With the verifier choosing,
  best-of-n solves a task exactly when one of the n samples does: its accuracy *is* pass@n,
  and the evaluation reports it under that name, never as accuracy;
- ``reward``: the answer the run's reward scores highest, each answer scored as a one-turn
  match (per-turn rewards: a judge rating each turn, a reward model), ties to the earlier.

The n answers are sampled even when the caller asks for greedy play (n greedy answers would
be one answer n times). In training, the same search is a game with G answers per task and
the ``sft`` objective keeping the best ones (``keep: top-k``): expert iteration.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from selfplay.api.policy import Policy, Request
from selfplay.api.tasks import AnswerCheck
from selfplay.api.types import Completion, Episode, Turn

Chooser = Callable[[Request, Sequence[Completion]], int]


class BestOfN(Policy):
    def __init__(self, policy: Policy, n: int, choose: Chooser) -> None:
        if n < 1:
            raise ValueError(f"best-of-n needs n >= 1, got {n}.")
        self.policy, self.n, self.choose = policy, n, choose
        self.name = getattr(policy, "name", "policy")

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        # the same request n times: each copy draws its own sampling seed from the match RNG
        repeated = [request for request in requests for _ in range(self.n)]
        answers = self.policy.act(repeated, greedy=False)
        chosen = []
        for i, request in enumerate(requests):
            candidates = answers[i * self.n : (i + 1) * self.n]
            chosen.append(candidates[self.choose(request, candidates)])
        return chosen


def verifier_chooser(request: Request, candidates: Sequence[Completion]) -> int:
    """The first candidate the game's check passes, else the first (see the module doc)."""
    game = request.game
    if not isinstance(game, AnswerCheck):
        raise ValueError(
            f"best-of-n by verifier needs a game that checks an answer ({game.name} does not); "
            "choose by reward instead (eval.best_of_by=reward)."
        )
    for k, candidate in enumerate(candidates):
        if game.check_answer(request.state, request.role, candidate.text):
            return k
    return 0


def reward_chooser(reward: Any) -> Chooser:
    """The candidate with the highest total score under ``reward`` (a bound RewardPipeline)."""

    def choose(request: Request, candidates: Sequence[Completion]) -> int:
        episodes = [_one_turn(request, candidate) for candidate in candidates]
        scores = reward(episodes)
        totals = [s.totals(ep).get(request.role) for s, ep in zip(scores, episodes, strict=True)]
        return max(range(len(candidates)), key=lambda k: (totals[k] is not None, totals[k] or 0))

    return choose


def _one_turn(request: Request, candidate: Completion) -> Episode:
    game = request.game
    action, _ = game.action_of(candidate.text, request.state, request.role)
    turn = Turn(
        request.role, "candidate", request.messages, candidate.text, action, action is not None
    )
    return Episode(
        game=game.name,
        seed=request.state.seed,
        seats={role: "candidate" for role in game.roles},
        turns=(turn,),
        outcome=dict.fromkeys(game.roles, 0.0),
        state=request.state.model_dump(mode="json"),
    )


def best_of(policy: Policy, n: int, by: str, reward: Any = None) -> tuple[BestOfN, str]:
    """The best-of-``n`` policy choosing ``by`` verifier or reward, and its metric's name."""
    if by == "verifier":
        return BestOfN(policy, n, verifier_chooser), f"pass@{n}"
    return BestOfN(policy, n, reward_chooser(reward)), f"best_of_{n}"


def searched_task_metrics(
    game: Any, policy: Policy, ev: Any, seed: int, reward: Any, progress: Any = None
) -> dict:
    """The greedy task metrics, plus pass@n / best_of_n when ``ev.best_of`` > 1.

    ``progress(done, total, rounds)`` counts the tasks of both passes."""
    from selfplay.core.evaluate import task_metrics

    passes = 2 if ev.best_of > 1 else 1

    def told(k: int) -> Any:
        return progress and (lambda d, total, r: progress(k * total + d, passes * total, r))

    row = task_metrics(game, policy, ev.matches, seed, progress=told(0))
    if ev.best_of > 1 and row:
        searching, name = best_of(policy, ev.best_of, ev.best_of_by, reward)
        found = task_metrics(game, searching, ev.matches, seed, name, progress=told(1))
        row.update({k: v for k, v in found.items() if k.endswith(name)})
    return row
