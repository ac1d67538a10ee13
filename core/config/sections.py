"""The sections of a run's settings that a learner may hold apart from the run's: generation,
the update (train), the cold start, LoRA; and those only the run holds: evaluation, hardware,
the pool. Collected into `RunConfig` by core/config/run.py.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class GenerationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_new_tokens: int = Field(default=8, ge=1, description="Tokens a policy may write per turn.")
    temperature: float = Field(default=1.0, gt=0, description="Sampling temperature.")
    top_p: float = Field(default=1.0, gt=0, le=1, description="Nucleus sampling mass.")
    choice: Literal["free", "legal"] = Field(
        default="free",
        description="free: the learner writes each move token by token; legal: it picks one of "
        "the game's legal answers, sampled by the model's probability of each (no invalid "
        "moves; games that list no legal answers are written freely). See "
        "core/models/policy_table.py.",
    )


class TrainConfig(BaseModel):
    """The update's settings, the same for every objective: the optimiser, the batches, the
    schedules, the KL reference's movement, the returns. An algorithm's own settings (the
    clip, the KL and entropy weights, epochs) are its objective's options
    (``objective_options``); their old names here are mapped there (`moved_to_objective`)."""

    model_config = ConfigDict(extra="forbid")

    lr: float = Field(default=1e-4, gt=0, description="AdamW learning rate.")
    weight_decay: float = Field(default=0.0, ge=0, description="AdamW weight decay.")
    minibatch_size: int = Field(default=256, ge=1, description="Samples per optimiser step.")
    micro_batch_size: int | None = Field(
        default=None,
        ge=1,
        description="Samples per forward/backward pass inside a minibatch (gradients add up; "
        "one optimiser step per minibatch); set, it replaces micro_batch_tokens.",
    )
    micro_batch_tokens: int | Literal["auto"] | None = Field(
        default="auto",
        description="Padded tokens (prompt and answer) per forward/backward pass inside a "
        "minibatch, which bounds the update's memory: auto sizes it from the model's width "
        "and depth (core/train/update/updater.py); a number; null = the whole minibatch.",
    )

    @field_validator("micro_batch_tokens")
    @classmethod
    def _positive_tokens(cls, value: Any) -> Any:
        if isinstance(value, int) and value < 1:
            raise ValueError("give at least 1 token, auto, or null for the whole minibatch")
        return value

    dropout: bool = Field(
        default=False,
        description="Keep the model's own dropout in the update (off by default: the rollouts "
        "sample without it, so the update scores what they sampled; lora.dropout stays).",
    )
    kl_coef_step: float = Field(
        default=0.0,
        description="Added to the objective's kl_coef after every iteration (seed 004: 0.1, "
        "step 0.02); "
        "negative decays it (never below 0). See core/train/schedules.py.",
    )
    kl_coef_max: float | None = Field(
        default=None, ge=0, description="Cap of the scheduled KL coefficient (null = none)."
    )
    kl_coef_min: float = Field(
        default=0.0,
        ge=0,
        description="Floor of a KL coefficient that a negative kl_coef_step decays (0 = none).",
    )
    lr_schedule: Literal["constant", "cosine"] = Field(
        default="constant",
        description="constant, or cosine: anneal from lr to lr_min by the last iteration.",
    )
    lr_warmup: int = Field(
        default=0, ge=0, description="Iterations of linear learning-rate warm-up from lr/N."
    )
    lr_min: float = Field(default=0.0, ge=0, description="The cosine schedule's final rate.")
    lr_decay_iterations: int | None = Field(
        default=None,
        ge=1,
        description="cosine: reach lr_min at this iteration and hold it after (null = the "
        "run's last iteration).",
    )

    reference_update: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Move the KL reference this fraction toward the policy after every "
        "iteration (0 = frozen; > 0 = a slowly moving magnet, as in magnetic mirror descent).",
    )
    weight_average: float = Field(
        default=0.0,
        ge=0,
        lt=1,
        description="Decay of a moving average of the weights after every update; evaluations "
        "and the run's last checkpoint use the average (0 = off; e.g. 0.9).",
    )
    search_weight: float = Field(
        default=0.0,
        ge=0,
        allow_inf_nan=False,
        description="Advantage shared by the moves a one-move search over the rules keeps at "
        "each learner position where it rules moves out: take a win, block a loss (expert "
        "iteration; games of perfect information; 0 = off). See core/train/search_targets.py.",
    )
    max_grad_norm: float = Field(default=1.0, gt=0, description="Gradient clipping norm.")
    gamma: float = Field(default=1.0, gt=0, le=1, description="Per-turn discount from the end.")
    invalid_reward: float | None = Field(
        default=None,
        allow_inf_nan=False,
        description="Return of an invalid attempt (default: invalid_moves.penalty).",
    )
    stagger: dict[str, int] = Field(
        default_factory=dict, description="Train a role only every n iterations: {solver: 2}."
    )


class ColdStartConfig(BaseModel):
    """Supervised warm-up on scripted players' transcripts before self-play."""

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(default=300, ge=0, description="Warm-up steps (0 = none).")
    players: list[str] = Field(default_factory=lambda: ["random"], description="Demonstrators.")
    lr: float = Field(default=5e-4, gt=0, description="Warm-up learning rate.")
    batch_size: int = Field(default=64, ge=1, description="Examples per warm-up step.")


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    every: int = Field(default=0, ge=0, description="Evaluate every n iterations (0 = ends only).")
    matches: int = Field(default=100, ge=2, description="Matches per scripted opponent.")
    opponents: list[str] | None = Field(default=None, description="Scripted players (all).")
    best_of: int = Field(
        default=1,
        ge=1,
        description="Also measure tasks best-of-n: n sampled answers, the best kept (1 = off).",
    )
    best_of_by: Literal["verifier", "reward"] = Field(
        default="verifier",
        description="Who picks the best of n: the game's verifier (reported as pass@n) or the "
        "run's reward (reported as best_of_n).",
    )


class HardwareConfig(BaseModel):
    """Passed to Lightning Fabric."""

    model_config = ConfigDict(extra="forbid")

    accelerator: str = Field(
        default="auto", description="auto (cuda when a GPU is visible, else cpu), cpu, cuda, mps."
    )
    devices: int = Field(default=1, ge=1, description="Processes / devices.")
    num_nodes: int = Field(
        default=1,
        ge=1,
        description="Machines, each running `devices` processes; launch every one with "
        "torchrun or SLURM (docs/scaling.md, Many GPUs / many machines).",
    )
    strategy: str = Field(default="auto", description="auto, ddp, deepspeed_stage_2, ...")
    malloc_trim: bool = Field(
        default=True,
        description="Hand freed memory back to the system when glibc keeps over 256 MB free "
        "(malloc_trim; checked after rollouts, updates, backward passes; not glibc: nothing).",
    )
    precision: str = Field(default="32-true", description="32-true, bf16-mixed, bf16-true, ...")


class LoraConfig(BaseModel):
    """The ``lora`` section of a run's config."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=False, description="Train LoRA adapters on a frozen base.")
    rank: int = Field(default=8, ge=1, description="Rank r of each adapter's update B·A.")
    alpha: float = Field(default=16.0, gt=0, description="Scale: the update is (alpha/r)·B·A.")
    dropout: float = Field(default=0.0, ge=0, lt=1, description="Dropout on adapter inputs.")
    target_modules: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Module names to adapt (name suffixes); default: the attention projections.",
    )
    per_role: bool = Field(
        default=False, description="One adapter per role on the shared base (name = role)."
    )


class PoolConfig(BaseModel):
    """The opponent pool of past selves, for samplers that use one (pool, psro, elo)."""

    model_config = ConfigDict(extra="forbid")

    snapshot_every: int = Field(
        default=5, ge=0, description="Snapshot the learner every n iterations (0 = never)."
    )
    size: int = Field(
        default=8, ge=2, description="Snapshots kept; the starting policy is never evicted."
    )
    scripted: list[str] = Field(
        default_factory=list, description="Scripted players that are members, e.g. [random]."
    )
    matches_per_pair: int = Field(
        default=32, ge=2, description="Matches per pair when a sampler asks for a payoff matrix."
    )
    keep_best: bool = Field(
        default=False,
        description="At each snapshot, play it against every other snapshot in the pool "
        "(matches_per_pair each) and, when it scores more than keep_best_margin below the "
        "pool's best member, put the learner back to that member's weights and clear the "
        "optimiser's moments. Judged by cross-play alone, never by the evaluation players; "
        "keeps a pool with any opponent sampler (docs/opponents.md).",
    )
    keep_best_margin: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="With keep_best: how far the new snapshot's cross-play score (1 a win, "
        "0.5 a draw, 0 a loss, averaged over the pool) may fall below the best member's "
        "before the learner goes back to the best.",
    )
    server: str | None = Field(
        default=None,
        description="With --lora: serve every snapshot as an adapter on this server "
        "(openai:http://HOST:PORT/v1, vLLM's dynamic LoRA) instead of in memory.",
    )


#: The algorithm settings that moved from ``train`` to the objective's options, with their old
#: defaults: an old config.yaml holds every one of them, and only what differs from them moves.
MOVED: dict[str, Any] = {
    "update_epochs": 1,
    "clip": 0.2,
    "kl_coef": 0.05,
    "entropy_coef": 0.0,
    "role_lr_scale": {},
}


def moved_key(key: str) -> str:
    """A dotted setting's name as the config reads it now: ``train.NAME`` of `MOVED` (a
    learner's, ``learners.L.train.NAME``, too) is ``objective_options.NAME``."""
    parts = key.split(".")
    at = 2 if parts[0] == "learners" else 0
    if parts[at : at + 1] == ["train"] and len(parts) == at + 2 and parts[-1] in MOVED:
        parts[at] = "objective_options"
    return ".".join(parts)


def moved_to_objective(settings: Any) -> Any:
    """A run's (or a learner's) settings with each ``train.NAME`` of `MOVED` given as
    ``objective_options.NAME`` instead, where that is not set already; a value at its old
    default is dropped (the objective's own default is the same)."""
    if not isinstance(settings, dict) or not isinstance(settings.get("train"), dict):
        return settings
    train = dict(settings["train"])
    moved = {key: train.pop(key) for key in list(train) if key in MOVED}
    if not moved:
        return settings
    options = dict(settings.get("objective_options") or {})
    for key, value in moved.items():
        if value != MOVED[key]:
            options.setdefault(key, value)
    settings = {**settings, "train": train}
    if options or settings.get("objective_options") is not None:
        settings["objective_options"] = options
    return settings
