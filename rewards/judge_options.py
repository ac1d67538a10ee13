"""The settings of an LLM judge (rewards/judge.py): the model that judges and how it reads,
the guards against answers that play it, and the judge's mode.

`JudgeModelOptions` are every model-judged reward's (the judge's, and quality's:
rewards/quality.py); `JudgeOptions` add the mode, scope, scale and pair of the judge.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from selfplay.api.reward import RewardOptions


class JudgeModelOptions(RewardOptions):
    model: str = Field(
        default="reference",
        description=(
            "reference (frozen start), learner, a registered model / model folder / hub id, "
            "or a served model (openai:http://HOST:PORT/v1#MODEL)."
        ),
    )
    template: str | None = Field(
        default=None, description="Shipped template name or a .txt file (default by mode)."
    )
    max_new_tokens: int = Field(default=32, ge=1, description="Tokens the judge may write.")
    batch_size: int | None = Field(
        default=64,
        ge=1,
        description="Questions per call to the judge model; the run shows progress per batch "
        "(null = all in one call).",
    )
    max_chars: int = Field(
        default=2000, ge=1, description="Each text shown to the judge keeps its last N chars."
    )
    answer: Literal["write", "choose"] = Field(
        default="write",
        description="write: the judge writes its reply and the verdict line is read from it; "
        'choose: the judge picks the likeliest verdict line ("Winner: A", "Score: 3") '
        "without writing, never unreadable (a local judge model only).",
    )
    greedy: bool = Field(default=True, description="Judge greedily (else sample).")
    prefill: str | None = Field(
        default=None,
        description='Text the judge\'s reply starts with, e.g. "Score:": a small judge that '
        "rambles then answers straight away (the justification is skipped).",
    )
    strip_self_assessment: bool = Field(
        default=False, description="Drop sentences that address the judge or claim a score."
    )
    max_prompt_overlap: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Answers copying this share of the task aren't judged.",
    )
    length_penalty: float = Field(
        default=0.0, ge=0, description="Score lost per 100 characters beyond length_free."
    )
    length_free: int = Field(
        default=300, ge=0, description="Characters an answer may use before length_penalty."
    )

    @model_validator(mode="after")
    def _answerable(self) -> JudgeModelOptions:
        if self.answer != "choose":
            return self
        if self.model.startswith("openai:"):
            raise ValueError(
                f"answer=choose scores each verdict line with the judge model, but {self.model} "
                "is served and answers only by writing. Use answer=write with a served judge, "
                "or a local judge model (reference, learner, a model folder or hub id)."
            )
        if self.prefill:
            raise ValueError(
                f"prefill={self.prefill!r} starts a written reply, but answer=choose picks a "
                "whole verdict line and writes nothing. Drop prefill, or use answer=write."
            )
        return self


class JudgeOptions(JudgeModelOptions):
    mode: Literal["pointwise", "pairwise"] = Field(
        default="pointwise", description="Score one match (pointwise) or compare two roles."
    )
    scope: Literal["transcript", "turn"] = Field(
        default="transcript", description="Pointwise: rate the whole match or each turn."
    )
    scale: int = Field(default=10, ge=1, description="Pointwise scores run from 0 to scale.")
    pair: list[str] | None = Field(
        default=None, description="Pairwise: the two roles compared (default: the game's two)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> JudgeOptions:
        if self.mode == "pairwise" and self.scope == "turn":
            raise ValueError("pairwise compares two roles over a match; use scope=transcript.")
        if self.pair is not None and len(self.pair) != 2:
            raise ValueError(f"pair names two roles, got {self.pair}.")
        return self
