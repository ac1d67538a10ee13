"""Language Self-Play's quality self-reward (Kuba et al., 2025, "Language Self-Play").

The reference model rates the whole interaction (the challenger's task and the solver's
answer) from 0 to 7; the normalised score ``score / 7`` is added to every role's reward. It
keeps a challenger from winning by posing nonsense a solver cannot answer. An unreadable
rating is masked and counted, never a 0.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from selfplay.api.reward import Reward
from selfplay.plugins.hookspecs import hookimpl
from selfplay.rewards.judge import Judge
from selfplay.rewards.judge_options import JudgeModelOptions

QUALITY_SCALE = 7


class QualityOptions(JudgeModelOptions):
    template: str | None = Field(
        default="quality", description="Shipped template name or a .txt file."
    )


class Quality(Judge):
    """The reference model rates the whole interaction 0-7; score/7 goes to every role."""

    name = "quality"
    Options = QualityOptions

    def __init__(self, **options: Any) -> None:
        Reward.__init__(self, **options)
        self.mode, self.scope, self.scale = "pointwise", "transcript", QUALITY_SCALE
        self._setup()


@hookimpl
def register_rewards(register):
    register("quality", Quality)
