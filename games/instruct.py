"""Instruct: one role answers an instruction ``answers`` (G) times; a judge scores each answer.

Self-Rewarding Language Models (Yuan et al. 2024) in game form. Instructions come from a
shipped bank (``games/data/instructions.jsonl``, with a held-out split that training never
draws). Every answer sees only the instruction, never the other answers, so the G answers
share one prompt: a GRPO group, and the candidates of a DPO pair.

Games never call models, so the rules decide nothing (a finished match pays 0). The game's
default reward is ``judge``, which ``reward_defaults`` sets to rate each answer on its own
(``scope=turn``) on the strict additive 0-5 scale of the paper's judge prompt
(``judge_strict``). The model that judges is the judge's ``model`` option: the frozen
reference by default, or the learner itself for self-rewarding:

    selfplay run --game instruct --model smollm2-135m --reward judge \\
        --set reward_options.judge.model=learner --objective dpo
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from pydantic import Field

from selfplay.api.game import GameState
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.text_game import TextGame, TextGameOptions, load_bank
from selfplay.plugins.hookspecs import hookimpl

ROLE = "assistant"
BANK = "instructions"
CANNED = (  # what random playouts write; any non-empty short text is a legal move
    "Here is a short, direct answer to the instruction.",
    "I am not sure, but I will try my best.",
)


class InstructOptions(TextGameOptions):
    answers: int = Field(default=4, ge=1, le=64, description="Answers (G) to each instruction.")
    max_chars: int = Field(
        default=1200, ge=1, description="Longest valid answer, in characters (longer is invalid)."
    )
    max_turns: int = Field(default=64, ge=1, description="Moves after which the match ends.")


class InstructState(GameState):
    instruction_id: str
    instruction: str
    answers: tuple[str, ...] = ()


def canned_player(game: Any, state: GameState, role: Role, rng: random.Random) -> str:
    return rng.choice(CANNED)


class Instruct(TextGame):
    name = "instruct"
    roles = (ROLE,)
    description = (
        "Self-rewarding: one assistant answers an instruction G times; a judge (the learner "
        "itself with reward_options.judge.model=learner) scores each answer 0-5."
    )
    Options = InstructOptions
    State = InstructState
    zero_sum = False
    move_noun = "answer"
    players: ClassVar[dict[str, Any]] = {"canned": canned_player}
    default_reward = "judge"
    recipe = "instruct"  # no cold start, 128-token answers (recipes/instruct.py)
    reward_defaults: ClassVar[dict[str, dict[str, Any]]] = {
        "judge": {"scope": "turn", "scale": 5, "template": "judge_strict"}
    }

    def initial(self, seed: int, rng: random.Random) -> InstructState:
        record = rng.choice(load_bank(BANK, self.options.split))
        return InstructState(
            seed=seed, instruction_id=record["id"], instruction=record["instruction"]
        )

    def current_role(self, state: InstructState) -> Role | None:
        return ROLE if len(state.answers) < self.options.answers else None

    def prompt(self, state: InstructState, role: Role) -> list[Message]:
        return [Message("user", state.instruction)]

    def apply(self, state: InstructState, role: Role, action: str) -> InstructState:
        return state.model_copy(update={"answers": (*state.answers, action)})

    def result(self, state: InstructState) -> Payoffs | None:
        """0 once every answer is in: the judge scores the answers (see above)."""
        return None if self.current_role(state) is not None else {ROLE: 0.0}

    def legal_actions(self, state: InstructState, role: Role) -> list[str]:
        return list(CANNED)

    def signals(self, state: InstructState) -> dict[str, float]:
        lengths = [len(a) for a in state.answers]
        return {
            **super().signals(state),
            "answer_chars": sum(lengths) / len(lengths) if lengths else 0.0,
        }


@hookimpl
def register_games(register):
    register(Instruct)
