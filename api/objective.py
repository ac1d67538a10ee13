"""The objective contract: what an update step minimises.

An objective turns the iteration's learner samples into the loss of one optimiser step. The
loop prepares what the objective declares it ``needs``:

- ``"advantages"``: the advantage estimator runs first, and `prepare` receives one advantage
  per sample (``None`` for a sample the estimator dropped); the policy gradient (``pg``) works
  on these;
- ``"samples"``: no estimator runs; `prepare` reads the samples' returns and groups
  itself (preference pairs for DPO, kept samples for filtered SFT).

`prepare` turns the iteration's data into *items*: the units a minibatch is made of (a sample
with its advantage; a chosen/rejected pair). Every item lists its ``samples``; the loop
scores those rows under the current policy (with gradients) and, when `wants_reference`, under
the reference (without), and hands both to `loss`, row for row in item order. An objective
never calls the model itself, so its loss reads like its equation, and the same objective
runs unchanged on LoRA adapters, DDP and DeepSpeed.

Minibatches hold whole items; under several processes every process takes the same number of
optimiser steps, so an objective must not assume its items are the whole batch.

An objective owns its settings: they are fields of its `Options` (``objective_options.*``),
typed, with their defaults and descriptions, so ``selfplay objectives`` lists them. The
algorithm settings several objectives share are typed once here (`UpdateEpochs`, `Clip`,
`KLCoef`, `EntropyCoef`, `RoleLRScale`: the `TRAIN_KEYS`); an objective that reads one
declares it among its options, and `reads` is derived from them: `loss` reads every setting
from ``self.options``, the one face it has. How a sample's turn was sampled (served, its
staleness cap, the age decay) rides with the sample (`Sample.sampling`), not with the
objective. The old spellings ``train.clip``,
``train.kl_coef``, ... are mapped onto ``objective_options`` (docs/configuration.md). A
setting the user gives that the objective does not take would do nothing, so the run refuses
it; a recipe's is left out with a note.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol

from pydantic import Field

from selfplay.api.options import Options

if TYPE_CHECKING:
    import torch

    from selfplay.api.estimator import Sample
    from selfplay.api.types import Episode

Needs = Literal["advantages", "samples"]


class Item(Protocol):
    """One minibatch unit: the samples it scores, kept together in one minibatch."""

    samples: tuple[Sample, ...]


@dataclass(frozen=True)
class Scored:
    """Per-token quantities of a list of rows, shaped ``[rows, answer tokens]``.

    ``logp`` is each answer token's log-probability; ``entropy`` the policy's entropy at that
    position (zeros when not asked for); ``mask`` marks real tokens (rows are right-padded).
    """

    logp: torch.Tensor
    entropy: torch.Tensor
    mask: torch.Tensor


@dataclass(frozen=True)
class Loss:
    """The loss of one minibatch (a scalar tensor with gradients) and numbers to log."""

    loss: torch.Tensor
    metrics: dict[str, float] = field(default_factory=dict)


# ---- the algorithm settings objectives share, typed once -----------------------------------
#
# An objective that reads one declares it among its `Options` (``kl_coef: KLCoef = 0.05``).
# ``kl_coef`` brings its schedule (``train.kl_coef_step``, ``train.kl_coef_max``) and
# ``train.reference_update`` (the KL reference moving toward the policy), which stay in train.

UpdateEpochs = Annotated[
    int,
    Field(
        ge=1,
        description="Passes over each batch (PPO-clip against the sampled "
        "log-probabilities when more than 1).",
    ),
]
Clip = Annotated[float, Field(gt=0, description="PPO ratio clip epsilon.")]
KLCoef = Annotated[float, Field(ge=0, description="Weight of the KL to the reference.")]
EntropyCoef = Annotated[float, Field(ge=0, description="Weight of the entropy bonus.")]
RoleLRScale = Annotated[
    dict[str, float], Field(description="Per-role loss scale, e.g. {player_1: 0.5}.")
]

#: The shared algorithm settings, by name, and what each is for an objective that does not
#: declare it (nothing it reads: one epoch, no KL, no entropy bonus, no role's scale).
UNREAD: dict[str, Any] = {
    "update_epochs": 1,
    "clip": 0.2,
    "kl_coef": 0.0,
    "entropy_coef": 0.0,
    "role_lr_scale": {},
}
TRAIN_KEYS = tuple(UNREAD)


@dataclass(frozen=True)
class IterationData:
    """What `Objective.prepare` receives: this process's samples of one iteration.

    ``advantages`` is one value per sample when the objective needs advantages, else None.
    ``episodes`` are this process's matches (``Sample.episode`` indexes them). ``encode``
    turns a text the learner did not write (a reference answer) into answer token ids ending
    with end-of-sequence, so it can be scored like a sample under the same prompt;
    ``reference(sample)`` is the game's reference answer to the sample's task (None when the
    game has none; see `selfplay.api.tasks.ReferenceAnswers`). ``terms`` are the labels of
    the reward's weighted terms (the keys of ``Sample.parts``); ``reduce`` sums a tensor over
    every training process (call it the same number of times on every process).
    ``iteration`` is the iteration (1-based) the samples were played for; 0 where no run's loop
    calls (a schedule an objective keeps reads it as its start).
    """

    samples: Sequence[Sample]
    advantages: Sequence[float | None] | None = None
    episodes: Sequence[Episode] = ()
    encode: Callable[[str], tuple[int, ...]] | None = None
    reference: Callable[[Sample], str | None] | None = None
    terms: tuple[str, ...] = ()
    reduce: Callable[[torch.Tensor], torch.Tensor] | None = None
    iteration: int = 0


class ObjectiveOptions(Options):
    """An objective's options when it declares none of its own: the update's passes over each
    batch. An objective's `Options` derive from it, or from `Options` to read no epochs."""

    update_epochs: UpdateEpochs = 1


class Objective(ABC):
    """What the update minimises; options arrive as keyword arguments (``objective_options``)."""

    name: ClassVar[str] = "objective"
    Options: ClassVar[type[Options]] = ObjectiveOptions
    needs: ClassVar[Needs] = "advantages"
    #: Column names `loss` reports, in order; every step logs their means (0 when no step ran).
    metric_names: ClassVar[tuple[str, ...]] = ()
    #: The ``generation.choice`` the objective trains, when it needs one (``legal-pg``: legal).
    generation_choice: ClassVar[str | None] = None
    #: What it does with a stale sample (served, overlapped rollouts: ``Sample.staleness`` > 0,
    #: played by older weights): "corrects" it against the policy that sampled it (and takes
    #: ``rollout.stale: reweight``'s age weights), "unaffected" (its loss does not read the
    #: sampling policy: it trains the sample as it is), or "refuses" (`stale_reason` says why,
    #: and ``rollout.max_staleness`` > 0 is refused before any work).
    stale: ClassVar[str] = "refuses"
    stale_reason: ClassVar[str] = "it does not say how it treats a sample of older weights"

    def __init__(self, **options: Any) -> None:
        self.options = type(self).Options(**options)

    @property
    def train(self) -> Any:
        """Gone: the settings were copied here as ``self.train``; they are read from
        ``self.options`` now, and a sample's rollout facts from ``sample.sampling``."""
        raise AttributeError(
            f"{type(self).__name__}.train is gone: read the objective's settings from "
            "self.options (self.options.kl_coef, .clip, .entropy_coef, .update_epochs, "
            ".role_lr_scale: declare them among your Options), a sample's importance cap and "
            "age weight from sample.sampling (CHANGELOG.md)."
        )

    def reads(self) -> frozenset[str]:
        """The shared algorithm settings (of `TRAIN_KEYS`) this objective reads: those its
        `Options` declare (`ObjectiveOptions` declares ``update_epochs``). An objective that
        ``needs`` advantages reads the estimator's settings too (``estimator``,
        ``estimator_options``, ``train.search_weight``)."""
        return frozenset(TRAIN_KEYS) & set(type(self).Options.model_fields)

    @staticmethod
    def reduce(tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` summed over every training process (itself in a run of one process).

        The run replaces it before training, so `loss` may use a batch statistic of every
        process (KTO's reference point); call it the same number of times on every process,
        on values without gradients.
        """
        return tensor

    def shared(self, key: str) -> Any:
        """The shared setting ``key`` (of `TRAIN_KEYS`) as this objective trains with it: its
        option, or the value that changes nothing when it does not declare one (`UNREAD`)."""
        if key in type(self).Options.model_fields:
            return getattr(self.options, key)
        unread = UNREAD[key]
        return dict(unread) if isinstance(unread, dict) else unread

    def set_kl_coef(self, kl_coef: float) -> None:
        """This iteration's KL coefficient, from the schedule (``train.kl_coef_step``): the
        objective's options with ``kl_coef`` changed. Only for an objective that reads it."""
        self.options = self.options.model_copy(update={"kl_coef": kl_coef})

    @abstractmethod
    def prepare(self, data: IterationData) -> list[Any]:
        """The iteration's items (see the module doc); empty when nothing is to be learned."""

    def wants_reference(self) -> bool:
        """Whether `loss` reads the reference's scores (the loop skips that pass otherwise)."""
        return False

    def wants_entropy(self) -> bool:
        """Whether `loss` reads the policy's entropy (costs a pass over the vocabulary)."""
        return False

    def weight(self, items: Sequence[Any]) -> float:
        """How many units `loss` averages over in ``items``: their answer tokens by default.

        The update scores a minibatch in parts (micro-batches, role groups) and weights each
        part's loss by its share of this, so the parts add up to the whole minibatch's loss.
        An objective whose loss is a mean over items (DPO's pairs) returns ``len(items)``.
        """
        return float(sum(len(s.token_ids) for item in items for s in item.samples))

    def refreshes_reference(self) -> bool:
        """Whether the reference is the policy at the start of each iteration (DPO's M_t)."""
        return False

    def game_options(self) -> dict[str, Any]:
        """Game options this objective's settings need (e.g. hinted retries for STaR).

        The run sets them before the game is made; a game without such an option, or a user
        setting that contradicts one, is a configuration error.
        """
        return {}

    @abstractmethod
    def loss(self, items: Sequence[Any], current: Scored, reference: Scored | None) -> Loss:
        """The minibatch loss; ``current``/``reference`` score the items' samples, in order."""

    def stale_options(self) -> dict[str, Any]:
        """The options a run that trains stale samples records in its settings (config.yaml)
        when the user left them unset: defaults that a later release may change (pg's
        ``correction``), so that a resume trains as the run began."""
        return {}

    def iteration_metrics(self) -> dict[str, float]:
        """Numbers about the last `prepare` (pairs formed, samples kept), for metrics.csv."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        del state
