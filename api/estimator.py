"""What estimators see: one `Sample` per learner turn, and a way to reduce across processes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from selfplay.api.options import Options
from selfplay.api.types import Role

if TYPE_CHECKING:  # torch is imported where tensors are made, so `import selfplay` stays light
    import torch

# Sums a tensor over every training process (identity with one process).
Reduce = Callable[["torch.Tensor"], "torch.Tensor"]


def local(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


@dataclass(frozen=True, slots=True)
class Sampling:
    """How a learner's turns were sampled, as the update's corrections read it; one record
    rides with every sample of a learner (`Sample.sampling`).

    ``importance_cap``: the cap C of the importance weight between the policy trained and the
    one that sampled (``rollout.importance_cap``; 2.0 when the turns are served, where another
    copy of the weights sampled them); None: sampled by the weights being trained, nothing to
    correct. ``max_staleness``: the weight syncs its learner lets a sample trail by
    (``rollout.max_staleness``; 0: trained in turn). ``age_decay``: under ``rollout.stale:
    reweight``, the factor a sample's loss takes per sync past that cap (None: not reweighted).
    """

    importance_cap: float | None = None
    max_staleness: int = 0
    age_decay: float | None = None

    def age_weight(self, staleness: int) -> float:
        """A sample's loss factor for its age: ``age_decay ** (staleness - max_staleness)``
        past the cap under ``rollout.stale: reweight``, else 1."""
        if self.age_decay is None or staleness <= self.max_staleness:
            return 1.0
        return self.age_decay ** (staleness - self.max_staleness)


#: Turns sampled in process by the weights they train: nothing to correct.
IN_PROCESS = Sampling()


@dataclass(frozen=True, slots=True)
class Sample:
    """One learner turn ready for the update: what it saw, what it wrote, what that earned."""

    game: str
    role: Role
    prompt_ids: tuple[int, ...]
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    reward: float  # the turn's return: the role's score, discounted by its later turns
    group: tuple[int, ...]  # GRPO group key: samples of the same prompt
    valid: bool = True
    episode: int = 0  # position of its match in the batch: the turns of one match share it
    # ``reward`` split by reward term label (``judge``, ``quality``; ``invalid`` for the
    # penalty of an invalid attempt); the parts sum to ``reward``. Empty when not known.
    parts: dict[str, float] = field(default_factory=dict)
    # who held the match's other seats ("learner", "scripted:minimax", "snapshot:3"; several
    # joined by "+"): RAE can keep one baseline per opponent (``per_opponent``)
    opponent: str = ""
    turn: int = 0  # the position of its turn in its match (``Episode.turns[turn]``)
    # the legal answers it was chosen from, itself included (``generation.choice: legal``)
    menu: tuple[str, ...] = ()
    # served, overlapped rollouts: the weight syncs (the learner's own updates) between the
    # policy that sampled it and the one it trains; 0 in turn and in-process
    staleness: int = 0
    # under the legal choice, log q(chosen answer) under the policy that chose it (the menu's
    # softmax); None when not recorded (in-process play, whose samples are never stale)
    choice_logprob: float | None = None
    # how its turn was sampled (served or in process, the staleness cap, the age decay)
    sampling: Sampling = IN_PROCESS


class Estimator(ABC):
    """Turns sample returns into advantages; ``None`` drops a sample from the update.

    Options arrive as keyword arguments (``estimator_options``) and are validated by the
    estimator's ``Options`` class, a pydantic model whose descriptions `selfplay estimators`
    prints.
    """

    name: ClassVar[str] = "estimator"
    Options: ClassVar[type[Options]] = Options

    def __init__(self, **options: Any) -> None:
        self.options = type(self).Options(**options)

    @abstractmethod
    def __call__(self, samples: Sequence[Sample], reduce: Reduce = local) -> list[float | None]:
        """One advantage per sample, in order."""

    def bind(self, game: str, roles: Sequence[str]) -> None:
        """Told once, before training, which game and roles the samples will come from.

        Statistics reduced across processes must be reduced in the same order on every
        process, even by one whose share of the matches lacks a role: keep to this list.
        """
        del game, roles

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        del state


def rewards_tensor(samples: Sequence[Sample]) -> torch.Tensor:
    import torch

    # float64 on purpose: integer rewards must never make an integer tensor (advantages would
    # silently truncate), and the statistics are reduced across processes exactly.
    return torch.tensor([s.reward for s in samples], dtype=torch.float64)
