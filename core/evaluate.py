"""Evaluation against the game's scripted players: greedy, in every seat, on fixed seeds.

Why fixed seeds: the same checkpoint then always meets the same deals, boards and opponent
dice, so a before/after comparison is paired and its difference is the policy's, not luck's.
Each seed is played once from every seat (duplicate-poker style), which also cancels the
first-mover advantage and the luck of the deal.

Why greedy: the learner's argmax answer is what it "believes"; sampling noise would blur the
comparison. `play(greedy=True)` passes the flag to every policy, but scripted players ignore
it and keep drawing from their match RNG, so ``random`` stays random.

Results are read from the seat the policy holds in each seating (by object, not by name), so a
policy may share its name with an opponent (``scripted:minimax`` against itself).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rich.table import Table

from selfplay.api.game import Game, GameState
from selfplay.api.policy import Policy, Request, ScriptedPolicy, has_player
from selfplay.api.tasks import TASK_SPLITS, TaskGame, task_role_of
from selfplay.api.types import Completion, Episode, Role
from selfplay.core.rollout import play, seatings_for
from selfplay.core.stats import wilson

#: The evaluation's seeds lie this far from the run's own (``eval_seed``), so the matches it
#: plays are never the matches the run trained on; a run and `selfplay eval` of its checkpoint
#: must agree on it to meet the same deals.
EVAL_SEED_OFFSET = 7919


def eval_seed(run_seed: int) -> int:
    """The first seed the evaluations (and held-out tasks) of a run with ``run_seed`` play."""
    return run_seed + EVAL_SEED_OFFSET


@dataclass(frozen=True)
class EvalResult:
    """The policy's record against one scripted opponent; rates are over ``matches``."""

    opponent: str
    matches: int
    wins: int
    draws: int
    losses: int
    forfeits: int  # matches the policy lost by an invalid move
    win_rate: float
    non_loss_rate: float
    win_interval: tuple[float, float]  # Wilson 95%
    non_loss_interval: tuple[float, float]
    invalid_rate: float  # invalid attempts / attempts by the policy
    mean_action_chars: float  # length of the policy's valid answers
    mean_payoff: float  # the game's own scale: chips in Kuhn poker, ±1 in tic-tac-toe
    payoff_by_role: dict[Role, float] = field(default_factory=dict)
    win_rate_by_role: dict[Role, float] = field(default_factory=dict)

    def as_metrics(self, prefix: str = "eval") -> dict[str, float]:
        """Flat ``{prefix}/{opponent}/{name}`` numbers for metrics.csv and loggers."""
        head = f"{prefix}/{self.opponent}"
        values: dict[str, float] = {
            "matches": self.matches,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "forfeits": self.forfeits,
            "win_rate": self.win_rate,
            "win_rate_low": self.win_interval[0],
            "win_rate_high": self.win_interval[1],
            "non_loss_rate": self.non_loss_rate,
            "non_loss_low": self.non_loss_interval[0],
            "non_loss_high": self.non_loss_interval[1],
            "invalid_rate": self.invalid_rate,
            "mean_action_chars": self.mean_action_chars,
            "mean_payoff": self.mean_payoff,
        }
        values.update({f"payoff/{r}": v for r, v in self.payoff_by_role.items()})
        values.update({f"win_rate/{r}": v for r, v in self.win_rate_by_role.items()})
        return {f"{head}/{name}": float(v) for name, v in values.items()}


def eval_seeds(game: Game, matches: int, seed: int) -> list[int]:
    """Match seeds for one opponent: each deal repeated once per role, so every seat sees it.

    `seatings_for` gives the policy role ``i % len(roles)`` in match ``i``; consecutive
    matches sharing a seed therefore put the policy in each seat of the same deal.
    """
    rng = random.Random(f"selfplay-eval-{seed}")
    deals = [rng.getrandbits(48) for _ in range(-(-matches // len(game.roles)))]
    return [deals[i // len(game.roles)] for i in range(matches)]


def evaluate(
    game: Game,
    policy: Policy,
    *,
    opponents: Sequence[str] | None = None,
    matches: int = 100,
    seed: int = 0,
    progress: Callable[[int, int, int], None] | None = None,
    roles: Sequence[Role] | None = None,
) -> dict[str, EvalResult]:
    """``policy`` (greedy) against each scripted player, ``matches`` matches each, all seats
    (``roles``: only those, for a learner that plays some roles).

    A game with one role has no opponent to face: it is measured by its tasks
    (`task_metrics`), and evaluates against nobody unless ``opponents`` names players.
    """
    if opponents is None:
        opponents = list(game.players) if len(game.roles) > 1 else []
    names = list(opponents)
    unknown = [name for name in names if not has_player(game, name)]
    if unknown:
        known = ", ".join(sorted(game.players)) or "none"
        raise ValueError(
            f"Game {game.name!r} has no scripted player(s) {unknown}; its players are: {known}."
        )
    if matches < 1:
        raise ValueError(f"matches must be at least 1, got {matches}.")
    seeds = eval_seeds(game, matches, seed)
    seatings = [
        s
        for name in names
        for s in seatings_for(game, policy, ScriptedPolicy(name), matches, roles)
    ]
    # One call for all opponents: the policy answers every waiting match in one batch.
    episodes = play(game, seatings, seeds * len(names), greedy=True, progress=progress)
    results = {}
    for k, name in enumerate(names):
        block = slice(k * matches, (k + 1) * matches)
        results[name] = summarise(name, policy, seatings[block], episodes[block])
    return results


def task_metrics(
    game: Game,
    policy: Policy,
    limit: int,
    seed: int = 0,
    name: str = "accuracy",
    progress: Callable[[int, int, int], None] | None = None,
    splits: Sequence[str] = TASK_SPLITS,
) -> dict[str, float]:
    """``eval/{split}/{name}|tasks|void`` for a `TaskGame` (empty for any other game).

    Games that generate tasks (proposer/solver games) measure the solver greedily on a fixed
    bank: the ``held_out`` split never trained on, and a ``transfer`` topic never trained on.
    Each task is played through the rollout engine from its start state; other roles answer
    the game's ``task_reply``. Void tasks (a verifier timeout) are counted, not scored.
    """
    if not isinstance(game, TaskGame):
        return {}
    row: dict[str, float] = {}
    replies = _TaskReplies()
    starts = {split: game.task_states(split, limit, seed) for split in splits}
    total, done = sum(len(states) for states in starts.values()), 0
    for split, states in starts.items():
        if not states:
            continue
        told = None if progress is None else lambda d, _, r, base=done: progress(base + d, total, r)
        verdicts = task_verdicts(game, policy, states, split, told, replies)
        done += len(states)
        counted = [v for v in verdicts if v is not None]
        row[f"eval/{split}/{name}"] = sum(counted) / len(counted) if counted else 0.0
        row[f"eval/{split}/tasks"] = float(len(counted))
        row[f"eval/{split}/void"] = float(len(verdicts) - len(counted))
    return row


def task_verdicts(
    game: Game,
    policy: Policy,
    states: Sequence[GameState],
    split: str = "held_out",
    progress: Callable[[int, int, int], None] | None = None,
    replies: Policy | None = None,
) -> list[bool | None]:
    """``game.task_solved`` of each task in ``states``, ``policy`` playing greedily in the
    split's acting role and the other roles answering the game's ``task_reply``."""
    acting, replies = task_role_of(game, split), replies or _TaskReplies()
    seatings = [
        {role: policy if role == acting else replies for role in game.roles} for _ in states
    ]
    seeds = [state.seed for state in states]
    episodes = play(game, seatings, seeds, greedy=True, starts=states, progress=progress)
    return [game.task_solved(game.State.model_validate(ep.state)) for ep in episodes]


class _TaskReplies(Policy):
    """The other roles of a task evaluation: each answers the game's ``task_reply``."""

    name = "task-replies"

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        return [
            Completion(text=r.game.continuation(r.game.task_reply(r.state, r.role)))
            for r in requests
        ]


def summarise(
    opponent: str,
    policy: Policy,
    seatings: Sequence[Mapping[Role, Policy]],
    episodes: Sequence[Episode],
) -> EvalResult:
    """The record of ``policy`` in ``episodes``, read from the one seat it held in each."""
    wins = draws = losses = forfeits = attempts = invalid = chars = valid = 0
    payoffs: dict[Role, list[float]] = {}
    role_wins: dict[Role, int] = {}
    for seating, ep in zip(seatings, episodes, strict=True):
        role = _seat_of(policy, seating)
        mine = [t for t in ep.turns if t.role == role]
        attempts += len(mine)
        invalid += sum(not t.valid for t in mine)
        valid += sum(t.valid for t in mine)
        chars += sum(len(t.text) for t in mine if t.valid)
        payoff = ep.outcome[role]
        # alone in its game, a policy wins with a positive payoff and loses with a negative one
        best_other = max((v for r, v in ep.outcome.items() if r != role), default=0.0)
        wins += payoff > best_other
        draws += payoff == best_other
        losses += payoff < best_other
        forfeits += ep.state.get("forfeit") == role
        payoffs.setdefault(role, []).append(payoff)
        role_wins[role] = role_wins.get(role, 0) + (payoff > best_other)
    n = len(episodes)
    return EvalResult(
        opponent=opponent,
        matches=n,
        wins=wins,
        draws=draws,
        losses=losses,
        forfeits=forfeits,
        win_rate=wins / n if n else 0.0,
        non_loss_rate=(wins + draws) / n if n else 0.0,
        win_interval=_interval(wins, n),
        non_loss_interval=_interval(wins + draws, n),
        invalid_rate=invalid / attempts if attempts else 0.0,
        mean_action_chars=chars / valid if valid else 0.0,
        mean_payoff=sum(sum(v) for v in payoffs.values()) / n if n else 0.0,
        payoff_by_role={r: sum(v) / len(v) for r, v in sorted(payoffs.items())},
        win_rate_by_role={r: role_wins[r] / len(payoffs[r]) for r in sorted(payoffs)},
    )


def _interval(successes: int, n: int) -> tuple[float, float]:
    """Wilson 95%, widened by rounding error only so it always contains the point estimate."""
    low, high = wilson(successes, n)
    if n:
        low, high = min(low, successes / n), max(high, successes / n)
    return low, high


def _seat_of(policy: Policy, seating: Mapping[Role, Policy]) -> Role:
    held = [role for role, holder in seating.items() if holder is policy]
    if len(held) != 1:
        raise ValueError(
            f"Evaluation needs the policy in exactly one seat of each match; it holds {held}."
        )
    return held[0]


def summary_table(
    before: Mapping[str, EvalResult], after: Mapping[str, EvalResult], title: str = "Evaluation"
) -> Table:
    """The run's closing table: per opponent, a row before training and a row after."""
    table = Table(title=title)
    names = list(before) + [name for name in after if name not in before]
    # several learners: rows named learner/opponent, never cut short
    first = "learner/opponent" if any("/" in name for name in names) else "opponent"
    widest = max((len(name) for name in names), default=0)
    table.add_column(first, justify="left", no_wrap=True, min_width=min(widest, 40))
    for column in ("", "win rate [95% CI]", "non-loss [95% CI]", "payoff", "invalid"):
        table.add_column(column, justify="left" if not column else "right")
    for name in names:
        for when, result in (("before", before.get(name)), ("after", after.get(name))):
            cells = [show(result) for show in _CELLS] if result else ["–"] * len(_CELLS)
            table.add_row(name if when == "before" else "", when, *cells)
    return table


def _with_interval(rate: float, interval: tuple[float, float]) -> str:
    return f"{rate:.2f} [{interval[0]:.2f}, {interval[1]:.2f}]"


_CELLS: tuple[Callable[[EvalResult], str], ...] = (
    lambda r: _with_interval(r.win_rate, r.win_interval),
    lambda r: _with_interval(r.non_loss_rate, r.non_loss_interval),
    lambda r: f"{r.mean_payoff:+.3f}",
    lambda r: f"{r.invalid_rate:.2f}",
)


def tasks_table(before: Mapping[str, float], after: Mapping[str, float]) -> Table:
    """Greedy accuracy on the game's task splits, before → after, each with its 95% interval,
    and the best-of-n measure (``pass@n``, ``best_of_n``) when the run asked for one."""
    table = Table(title="Tasks (greedy, never trained on)")
    searched = sorted({key.rsplit("/", 1)[1] for key in (*before, *after) if _is_searched(key)})
    measures = ("accuracy", *searched)
    for column in ("split", *measures, "tasks", "void"):
        table.add_column(column, justify="left" if column == "split" else "right")
    for split in TASK_SPLITS:
        if f"eval/{split}/tasks" not in before and f"eval/{split}/tasks" not in after:
            continue
        cells = []
        for name in (*measures, "tasks", "void"):
            key = f"eval/{split}/{name}"
            if name in measures:
                old, new = (_rate(side, split, name) for side in (before, after))
            else:
                old, new = (f"{side[key]:.0f}" if key in side else "–" for side in (before, after))
            cells.append(f"{old} → {new}")
        table.add_row(split, *cells)
    return table


def _is_searched(key: str) -> bool:
    name = key.rsplit("/", 1)[-1]
    return key.startswith("eval/") and (name.startswith("pass@") or name.startswith("best_of_"))


def _rate(side: Mapping[str, float], split: str, name: str) -> str:
    """``0.40 [0.25, 0.57]``: a rate over the split's tasks with its Wilson 95% interval."""
    key, count = f"eval/{split}/{name}", side.get(f"eval/{split}/tasks")
    if key not in side:
        return "–"
    if not count:
        return f"{side[key]:.2f}"
    return _with_interval(side[key], _interval(round(side[key] * count), int(count)))
