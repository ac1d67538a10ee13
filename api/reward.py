"""Rewards turn finished episodes into scores, per role or per turn.

A reward scores a batch of episodes in one of two shapes:

- per role (``per_turn = False``): one ``{role: score}`` per episode. The loop gives every
  turn of that role the score, discounted from the end of the match (``train.gamma``).
- per turn (``per_turn = True``): one list per episode with a score for each of its turns,
  in order (process rewards, judges of single moves, penalties for an invalid attempt). The
  loop adds each score to its own turn, undiscounted.

A score of ``None`` means the reward does not apply there (a role it does not judge, a judge
answer it could not read); it is never read as 0. Rewards are combined by
`selfplay.core.reward_pipeline.RewardPipeline` (``--reward outcome=1+format=0.1``).

Options are a small pydantic model (``Options``, ``extra="forbid"``); `selfplay rewards`
prints their descriptions. A reward that needs the game or a model (a judge) receives them
through `bind` before its first call.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from selfplay.api.errors import ConfigError
from selfplay.api.types import Episode, Message, Role

if TYPE_CHECKING:
    from selfplay.api.game import Game
    from selfplay.api.policy import Policy

RoleScores = dict[Role, float | None]
TurnScores = list[float | None]  # one per turn of the episode, in order


class RewardError(ConfigError):
    """A mistake in a reward's settings (a bad term, a signal the game lacks): exit code 2."""


@dataclass(frozen=True, slots=True)
class EpisodeScores:
    """The combined scores of one episode: per role (discounted by the loop) and per turn.

    ``parts`` holds each weighted component's own share by term label (``judge``,
    ``quality@challenger``), for estimators that treat components differently (LSP).
    """

    roles: RoleScores
    turns: tuple[float | None, ...]
    parts: dict[str, EpisodeScores] = field(default_factory=dict)

    def totals(self, episode: Episode) -> RoleScores:
        """Per role: its role score plus its turns' scores; None where nothing applied."""
        totals: RoleScores = dict(self.roles)
        for turn, score in zip(episode.turns, self.turns, strict=True):
            if score is not None:
                totals[turn.role] = (totals.get(turn.role) or 0.0) + score
        return totals


class RewardOptions(BaseModel):
    """Options every reward accepts (none); rewards subclass this and add their own."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class RewardContext:
    """What the run gives a reward before its first call.

    ``policy(name, max_new_tokens=None)`` returns a Policy by name: ``"learner"``, the
    learner's frozen ``"reference"``, a registered model name or a local model folder.
    ``device`` is the run's torch device (``"cuda:0"``), where a reward that runs a model of
    its own (a reward model) puts it; None means the CPU. ``measure(name, messages)`` gives
    ``(prompt tokens, context positions)`` of the named model for those messages, or None
    when it cannot tell, so a judge can check at start-up that its prompt fits.
    ``phase(label)`` is a context manager whose value, ``told(done, total)``, shows a long
    step's progress (a judge's batches) the way the run shows its own; None outside a run.
    ``folder(hub_id, option)`` is the local folder of a Hugging Face hub id (``Org/Name``),
    from the cache or fetched into it; errors name ``option``.
    """

    game: Game | None = None
    policy: Callable[..., Policy] | None = None
    device: str | None = None
    measure: Callable[[str, Sequence[Message]], tuple[int, int] | None] | None = None
    phase: Callable[[str], AbstractContextManager[Any]] | None = None
    folder: Callable[[str, str], Any] | None = None


class Reward(ABC):
    name: ClassVar[str] = "reward"
    Options: ClassVar[type[RewardOptions]] = RewardOptions
    per_turn: bool = False
    # Policies (by name, see RewardContext) this reward will ask for; the loop keeps a frozen
    # reference model only when some reward names "reference".
    models: frozenset[str] = frozenset()
    # The one role this reward is kept to (a ``name@role`` term); the pipeline masks the other
    # roles' scores anyway, but a costly or stateful reward may skip their turns.
    role: Role | None = None

    def __init__(self, **options: Any) -> None:
        self.options = self.Options(**options)
        self.context = RewardContext()
        # lines for the person starting the run, said once after `bind` (a judge that chose a
        # shorter template to fit its model)
        self.notices: list[str] = []

    def applies_to(self, role: Role) -> bool:
        return self.role is None or role == self.role

    @abstractmethod
    def __call__(self, episodes: Sequence[Episode]) -> list[RoleScores] | list[TurnScores]:
        """One RoleScores (or, when ``per_turn``, one TurnScores) per episode."""

    def bind(self, context: RewardContext) -> None:
        self.context = context

    def counters(self) -> dict[str, float]:
        """Counts about the last call (e.g. unreadable judge answers), logged as metrics.

        Always the same keys, because the loop sums them across processes.
        """
        return {}

    def notes(self) -> list[list[dict[str, Any]]]:
        """What the last call read, one list per episode, saved with the episode so a person
        can see why it scored as it did (a judge's raw answers:
        ``{"turn": index or None, "answer": text, "score": value or None}``).

        Empty (the default) when the reward has nothing to show.
        """
        return []

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def game(self) -> Game:
        """The bound game; an error naming the reward when `bind` was never called."""
        if self.context.game is None:
            raise RuntimeError(f"The {self.name!r} reward needs the game: call bind() first.")
        return self.context.game
