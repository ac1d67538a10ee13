"""Where the learner's turns are generated and what is played on from its positions: the
``rollout`` and ``branches`` sections of `RunConfig` (core/config/run.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


def server_list(value: Any) -> Any:
    """``--set rollout.servers=openai:URL#A,openai:URL#B`` (a ``#`` ends YAML's list)."""
    if isinstance(value, str):
        value = [part.strip() for part in value.strip("[]").split(",") if part.strip()]
    return value


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
        "one trains. learners.NAME.max_staleness sets one learner's apart.",
    )
    queue: int = Field(
        default=1,
        ge=1,
        description="With max_staleness >= 1: iterations the producer may play ahead of the "
        "update (the pipeline's depth; how stale a sample may be trained is max_staleness).",
    )
    stale: Literal["wait", "drop", "reweight"] = Field(
        default="wait",
        description="Past max_staleness: wait for newer weights before playing, drop the "
        "stale samples untrained (rollout/stale_dropped), or train them with their loss "
        "scaled by age_decay per sync past the cap (pg, legal-pg).",
    )
    age_decay: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="stale=reweight: the loss factor of a sample per weight sync past "
        "max_staleness (0.5: a sample two syncs past the cap counts a quarter).",
    )
    importance_cap: float | None = Field(
        default=None,
        gt=0,
        description="The cap of the objective's off-policy correction on served tokens (the "
        "old name of objective_options.importance_cap, which wins when set; null: 2.0 when "
        "served, off in-process).",
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
        return server_list(value)

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
