"""Fixed measurements: a game's bank of tasks, and evaluation suites of any policy.

An optional game capability: a solver measured on a fixed bank of tasks.

Games that generate tasks (proposer/solver games, single-role task games) can say how well
the learner solves problems it never trained on. A game offers this by implementing
`TaskGame`; the run's evaluation (``eval.every``) then plays each task through the ordinary
rollout engine, greedily, and logs ``eval/{split}/accuracy`` (plus ``tasks`` and ``void``):

- ``task_states(split, limit, seed)``: up to ``limit`` start states of ``split`` — ``held_out``
  (the bank's held-out problems), ``transfer`` (a topic never trained on), ``noisy`` (the
  held-out problems with irrelevant sentences inserted, for games that inject noise) or
  ``judge`` (labelled answers for a judge seat to rate) — the same ones for the same seed;
  an empty list when the game has no such split;
- ``task_role``: the role the learner plays in a task (``solver``); a game whose splits
  are played by different roles maps them in ``task_roles`` (``{"judge": "judge"}``);
- ``iteration_splits`` (optional): splits cheap enough to measure after every iteration, not
  only at evaluations (a judge's agreement with held-out labels);
- ``task_reply(state, role)``: what any other role answers when it must act in a task
  (e.g. declining a clarifying question);
- ``task_solved(final_state)``: True or False, or None for a void task (a verifier timeout),
  which is left out of the accuracy and counted.

Evaluation suites (`Suite`, `Bench`): a suite is a named, fixed measurement of any policy on
games of its choosing. ``selfplay eval --suite NAME`` runs one on a run folder, a checkpoint
folder or any model name ``--model`` accepts (an untrained model gives the baseline). A suite
plays its own games whatever game the policy trained on; a policy that cannot play them
simply scores low.

A suite never builds models or plays matches itself: the host lends it a `Bench` that does,
so a suite plug-in needs only the contracts. ``run`` returns every figure as one value per
seed. The host runs the suite once per prompt phrasing (``bench.game`` builds each game in
the bench's phrasing, `Game.phrasings`), and reports each figure's mean over every (seed,
phrasing) value with its min-max spread and standard deviation; a phrasing held out (the
suite's ``held_out``, or ``--held-out``) is reported apart, with its gap to that mean.
Suites register through the ``register_suites`` hook like every other plug-in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

from selfplay.api.game import Game, GameState
from selfplay.api.policy import Policy
from selfplay.api.types import Episode, Role

TASK_SPLITS = ("held_out", "transfer", "noisy", "judge")
# A game that gives hinted retries (STaR's rationalisation) lists their turn indices in its
# state under this key, so an objective can train a hinted answer under the un-hinted prompt.
HINTED_TURNS = "hinted_turns"


@runtime_checkable
class TaskGame(Protocol):
    task_role: Role

    def task_states(self, split: str, limit: int, seed: int) -> list[GameState]:
        """Start states of ``split`` for the task role; the same ones for the same seed."""
        ...

    def task_reply(self, state: GameState, role: Role) -> str:
        """The answer of a role other than ``task_role`` when it must act during a task."""
        ...

    def task_solved(self, state: GameState) -> bool | None:
        """Whether the finished task was solved; None for a void one."""
        ...


def task_role_of(game: TaskGame, split: str) -> Role:
    """The role the learner plays in ``split``'s tasks."""
    return getattr(game, "task_roles", {}).get(split, game.task_role)


def iteration_splits(game: object) -> tuple[str, ...]:
    """The splits ``game`` asks to have measured after every iteration."""
    return tuple(getattr(game, "iteration_splits", ()))


@runtime_checkable
class ReferenceAnswers(Protocol):
    """A game that knows a reference answer to each task (a bank's worked solution).

    SPIN's chosen side, and STaR's hint, are this answer.
    """

    def reference_answer(self, state: GameState, role: Role) -> str | None:
        """The reference completion ``role`` should have written in ``state``'s task."""
        ...


@runtime_checkable
class SpielMatch(Protocol):
    """A game OpenSpiel has too: its matches can be written as OpenSpiel match traces
    (``selfplay eval --suite NAME --traces DIR``, core/commands/traces.py)."""

    def spiel_game(self) -> str:
        """The OpenSpiel game string ``pyspiel.load_game`` reads, e.g. ``tic_tac_toe()``."""
        ...

    def spiel_actions(self, episode: Episode) -> list[tuple[int, int]]:
        """Every OpenSpiel action of the match, in order, chance outcomes included, as
        (player, action); the player is -1 for chance."""
        ...


@runtime_checkable
class AnswerCheck(Protocol):
    """A game that can check a candidate move without playing it (best-of-n by verifier)."""

    def check_answer(self, state: GameState, role: Role, text: str) -> bool:
        """Whether ``text``, as ``role``'s move in ``state``, is a right answer."""
        ...


# ---- evaluation suites -----------------------------------------------------------------------

#: A figure's values, one per seed, in the order of the seeds given.
Figures = dict[str, list[float]]


class Bench(Protocol):
    """What the host lends a suite: the policy, the games, and greedy matches."""

    policy: Policy

    phrasing: str  # the prompt wording of every game the bench builds

    def game(self, name: str) -> Game:
        """The registered game ``name`` with its default options, in the bench's phrasing."""

    def matches(
        self,
        game: Game,
        opponent: str,
        matches: int,
        seed: int,
        player: Policy | None = None,
    ) -> list[tuple[Role, Episode]]:
        """``matches`` greedy matches of the policy (or ``player``, e.g. a `ScriptedPolicy`)
        against the scripted player ``opponent``, in each seat in turn (every seat sees each
        deal); each with the role it played."""

    def table(self, game: Game) -> dict[str, dict[str, float]] | None:
        """The policy's probability of each legal action at each information set of a game
        that lists them (`TabularGame`); None when the policy cannot be read as a table."""

    def note(self, line: str) -> None:
        """Tell the user something the figures cannot say (a game left out, and why): shown
        with the table and kept in the report's ``notes``."""


class Suite:
    """A named measurement: subclass, set ``name``, ``description`` and ``games``, and
    implement `run`."""

    name: ClassVar[str]
    description: ClassVar[str]  # one line: what it measures
    games: ClassVar[tuple[str, ...]]  # the games it plays
    matches: ClassVar[int] = 100  # matches per opponent and seed unless --matches says
    # phrasings measured apart from the pooled ones, each with its gap (unless --held-out says)
    held_out: ClassVar[tuple[str, ...]] = ()

    def run(self, bench: Bench, seeds: Sequence[int], matches: int) -> Figures:
        """``{figure: [value for each seed]}``; ``matches`` per opponent and seed."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "games": list(self.games)}
