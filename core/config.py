"""RunConfig: every setting of a run, with its default and description.

The schema only: core/run/config_loader.py builds a RunConfig from defaults, a YAML file,
flags and ``--set``, and explains a bad key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from selfplay.api.game import InvalidMoveRules


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
    """The update's settings, read by every objective (see core/algorithms/pg.py)."""

    model_config = ConfigDict(extra="forbid")

    lr: float = Field(default=1e-4, gt=0, description="AdamW learning rate.")
    weight_decay: float = Field(default=0.0, ge=0, description="AdamW weight decay.")
    update_epochs: int = Field(default=1, ge=1, description="Passes over each batch (PPO if >1).")
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
        "and depth (core/train/update.py); a number; null = the whole minibatch.",
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
    clip: float = Field(default=0.2, gt=0, description="PPO ratio clip epsilon.")
    kl_coef: float = Field(default=0.05, ge=0, description="Weight of the k3 KL to the reference.")
    kl_coef_step: float = Field(
        default=0.0,
        description="Added to kl_coef after every iteration (seed 004: kl_coef 0.1, step 0.02); "
        "negative decays it (never below 0). See core/train/schedules.py.",
    )
    kl_coef_max: float | None = Field(
        default=None, ge=0, description="Cap of the scheduled KL coefficient (null = none)."
    )
    lr_schedule: Literal["constant", "cosine"] = Field(
        default="constant",
        description="constant, or cosine: anneal from lr to lr_min by the last iteration.",
    )
    lr_warmup: int = Field(
        default=0, ge=0, description="Iterations of linear learning-rate warm-up from lr/N."
    )
    lr_min: float = Field(default=0.0, ge=0, description="The cosine schedule's final rate.")
    reference_update: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Move the KL reference this fraction toward the policy after every "
        "iteration (0 = frozen; > 0 = a slowly moving magnet, as in magnetic mirror descent).",
    )
    entropy_coef: float = Field(default=0.0, ge=0, description="Weight of the entropy bonus.")
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
    role_lr_scale: dict[str, float] = Field(
        default_factory=dict, description="Per-role loss scale, e.g. {player_1: 0.5}."
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
    server: str | None = Field(
        default=None,
        description="With --lora: serve every snapshot as an adapter on this server "
        "(openai:http://HOST:PORT/v1, vLLM's dynamic LoRA) instead of in memory.",
    )


class RolloutConfig(BaseModel):
    """Where the learner's own turns are generated: in this process (the default), or on
    OpenAI-compatible inference servers that get the new weights after every update, with
    generation overlapped with the update (docs/serving.md, "Served rollouts")."""

    model_config = ConfigDict(extra="forbid")

    workers: int = Field(
        default=0,
        ge=0,
        description="Start this many `selfplay serve` rollout workers on this machine and "
        "generate there (0: none; the CPU threads are split between them and the trainer).",
    )
    servers: list[str] = Field(
        default_factory=list,
        description="Servers already running that generate the learner's turns: "
        "openai:http://HOST:PORT/v1#MODEL, e.g. vLLM started on the same base model.",
    )
    max_staleness: int = Field(
        default=0,
        ge=0,
        description="Weight syncs a sample may lag behind the update it trains: 0 plays and "
        "trains in turn (exactly the in-process run); 1 plays the next iteration while this "
        "one trains.",
    )
    queue: int = Field(
        default=1,
        ge=1,
        description="With max_staleness >= 1: iterations the producer may play ahead of the "
        "update (past max_staleness they wait for newer weights, or are dropped).",
    )
    stale: Literal["wait", "drop"] = Field(
        default="wait",
        description="Past max_staleness: wait for newer weights before playing, or drop the "
        "stale matches (counted in rollout/stale_dropped).",
    )
    importance_cap: float | None = Field(
        default=None,
        gt=0,
        description="Truncated importance weight min(pi_trainer/pi_server, cap) on each "
        "served token of the policy gradient (null: 2.0 when served, off in-process).",
    )
    pin: bool = Field(
        default=True,
        description="With local workers: give the trainer and each worker cores of their own "
        "when there are enough (their threads never contend).",
    )
    worker_threads: int = Field(
        default=0,
        ge=0,
        description="CPU threads per local rollout worker (0: the cores split evenly between "
        "the workers and the trainer).",
    )

    @field_validator("servers", mode="before")
    @classmethod
    def _server_list(cls, value: Any) -> Any:
        """``--set rollout.servers=openai:URL#A,openai:URL#B`` (a ``#`` ends YAML's list)."""
        if isinstance(value, str):
            value = [part.strip() for part in value.strip("[]").split(",") if part.strip()]
        return value

    @property
    def served(self) -> bool:
        return bool(self.workers or self.servers)


class BranchConfig(BaseModel):
    """Matches played on from the learner's positions, for a per-position baseline."""

    model_config = ConfigDict(extra="forbid")
    positions: int = Field(
        default=0,
        ge=0,
        description="Learner positions per iteration from which the match is played on again "
        "(0: off). Pair with a per-position baseline: estimator_options.per_state=true (rae).",
    )
    matches: int = Field(
        default=8,
        ge=2,
        description="Matches played to the end from each such position (at least 2, so the "
        "moves made there can be compared).",
    )


class RunConfig(BaseModel):
    """Every setting of a run. The defaults are the recipe `selfplay run` uses on a laptop CPU.

    Training defaults allow 2 retries after an invalid move (SPIRAL's preset allows none):
    measured with the tiny model, sampled self-play with no retries ended 13-45% of
    tic-tac-toe matches in a forfeit, drowning the game's own signal in format noise. An
    invalid attempt still earns the forfeit penalty as its own return (train.invalid_reward).
    """

    model_config = ConfigDict(extra="forbid")

    game: str = Field(default="tictactoe", description="Registered game name (`selfplay games`).")
    recipe: str | None = Field(
        default=None,
        description="Named run settings, applied where nothing else sets a key (`selfplay "
        "recipes`); default: the game's own recipe, if it has one; none: no recipe.",
    )
    game_options: dict[str, Any] = Field(default_factory=dict, description="The game's Options.")
    invalid_moves: InvalidMoveRules = Field(
        default_factory=lambda: InvalidMoveRules(allowance=2),
        description="Retries and forfeit payoffs (2 retries: see RunConfig's docstring).",
    )
    model: str = Field(default="tiny", description="Registered model name or a local HF folder.")
    model_options: dict[str, Any] = Field(default_factory=dict, description="Model loader options.")
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    reward: str | list[str | dict[str, Any]] | dict[str, float] | None = Field(
        default=None,
        description="Reward expression, e.g. 'outcome=1+format=0.1' (see `selfplay rewards`); "
        "in YAML also a list of terms or a {term: weight} mapping. Default: the game's own "
        "(outcome for most games).",
    )
    reward_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Options per reward name, e.g. {judge: {scale: 5}}."
    )
    reward_mode: Literal["sum", "normalize"] = Field(
        default="sum",
        description="sum: weighted sum; normalize: z-score each reward per role, then sum.",
    )
    opponent: str = Field(default="latest", description="Opponent sampler, e.g. 'fixed:random'.")
    opponent_options: dict[str, Any] = Field(
        default_factory=dict, description="Sampler options, e.g. p_latest for 'pool'."
    )
    pool: PoolConfig = Field(default_factory=PoolConfig)
    estimator: str = Field(
        default="rae", description="Advantage estimator (`selfplay estimators`)."
    )
    estimator_options: dict[str, Any] = Field(
        default_factory=dict, description="The estimator's options, e.g. {decay: 0.9}."
    )
    objective: str = Field(
        default="pg",
        description="What the update minimises (`selfplay objectives`): pg (policy gradient).",
    )
    objective_options: dict[str, Any] = Field(
        default_factory=dict, description="The objective's options."
    )
    train: TrainConfig = Field(default_factory=TrainConfig)
    cold_start: ColdStartConfig = Field(default_factory=ColdStartConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    hardware: HardwareConfig = Field(default_factory=HardwareConfig)
    lora: LoraConfig = Field(default_factory=LoraConfig)
    checkpoint_every: int = Field(default=10, ge=1, description="Checkpoint every n iterations.")
    callbacks: list[str] = Field(default_factory=list, description="Registered callbacks to run.")
    callback_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Options per callback, e.g. {diversity: {role: all}}."
    )
    iterations: int = Field(default=20, ge=0, description="Total iterations of the run.")
    minutes: float | None = Field(
        default=None,
        gt=0,
        description="Stop (checkpointed) after this many minutes of wall-clock time in this "
        "process; a resume may give a new limit (--resume RUN --set minutes=N).",
    )
    matches: int = Field(default=128, ge=1, description="Matches played per iteration.")
    branches: BranchConfig = Field(default_factory=BranchConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    seed: int = Field(default=0, description="Seed for every random choice of the run.")
    threads: int = Field(default=0, ge=0, description="Torch CPU threads (0: every usable core).")
    out: Path = Field(default=Path("runs"), description="Folder under which run folders are made.")
    name: str | None = Field(default=None, description="Run folder name (default: a timestamp).")
    resume: Path | None = Field(default=None, description="Run folder to continue.")
    loggers: list[str] = Field(
        default_factory=lambda: ["csv", "tensorboard"],
        description="Where metrics go, registered trackers: csv (metrics.csv, always "
        "written), tensorboard, wandb, mlflow, or a plug-in's (see core/run/trackers.py).",
    )
    logger_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Options per tracker, e.g. {wandb: {project: x, offline: true}}.",
    )

    @field_validator("loggers", mode="before")
    @classmethod
    def _logger_list(cls, value: Any) -> Any:
        """``--logger csv,wandb`` and ``loggers: [csv, wandb]`` read the same."""
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return value  # each name is checked against the registered trackers before a run
