"""RunConfig: every setting of a run, with its default and description (its sections live
beside it: sections.py, rollout.py, learners.py).

The schema only: core/plan/config_loader.py builds a RunConfig from defaults, a YAML file,
flags and ``--set``, and explains a bad key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from selfplay.api.game import InvalidMoveRules
from selfplay.core.config.learners import LearnerConfig
from selfplay.core.config.rollout import BranchConfig, RolloutConfig
from selfplay.core.config.sections import (
    ColdStartConfig,
    EvalConfig,
    GenerationConfig,
    HardwareConfig,
    LoraConfig,
    PoolConfig,
    TrainConfig,
    moved_to_objective,
)


class RunConfig(BaseModel):
    """Every setting of a run. The defaults are the recipe `selfplay run` uses on a laptop CPU.

    Training defaults allow 2 retries after an invalid move (SPIRAL's preset allows none):
    measured with the tiny model, sampled self-play with no retries ended 13-45% of
    tic-tac-toe matches in a forfeit, drowning the game's own signal in format noise. An
    invalid attempt still earns the forfeit penalty as its own return (train.invalid_reward).
    """

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _algorithm_settings(cls, data: Any) -> Any:
        """``train.clip`` and the other moved names, as ``objective_options``."""
        return moved_to_objective(data)

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
    learners: dict[str, LearnerConfig] = Field(
        default_factory=dict,
        description="Several learners, each with its own model, playing the roles it names "
        "(docs/learners.md; none: one shared policy plays every role).",
    )
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
