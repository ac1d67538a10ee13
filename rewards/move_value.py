"""A per-move reward from the game's exact values: what each move keeps of what was there.

Sparse outcomes teach a small model slowly; where the rules give every move's exact value (a
solved game: tic-tac-toe by minimax), a move can be scored on its own. A turn scores

    value(the move played) - value(the best legal move)

from the mover's side, in the game's payoff units: 0 for a move that keeps the position's
value, -1 for one that turns a draw into a loss at tic-tac-toe, -2 for a won position thrown
away. Dense, exact and never positive, it teaches what a solver knows without showing its
moves (the process rewards of NeMo Agent Toolkit's tic-tac-toe and Chess-R1). It uses a
solver, so a run trained on it is not pure self-play: each figure says which levers it used
(benchmarks/RESULTS.md).

    selfplay run --model smollm2-135m --lora --reward outcome+move-value=0.5 ...

A game offers it by defining ``move_values(state, role) -> {action: value}`` over the legal
actions (docs/games.md); other games are refused at start-up. An invalid attempt has no move:
its score is None (the invalid-move penalty scores it).
"""

from __future__ import annotations

from collections.abc import Sequence

from selfplay.api.reward import Reward, RewardContext, RewardError, TurnScores
from selfplay.api.types import Episode
from selfplay.plugins.hookspecs import hookimpl
from selfplay.rewards.process import states_before


class MoveValue(Reward):
    """Each move's exact value less the best legal move's (0 for a move that keeps it)."""

    name = "move-value"
    per_turn = True

    def bind(self, context: RewardContext) -> None:
        super().bind(context)
        game = context.game
        if game is not None and not callable(getattr(game, "move_values", None)):
            raise RewardError(
                f"move-value: {game.name} does not give its moves' exact values (a game offers "
                "them with move_values(state, role), as tictactoe does)."
            )
        self._mistakes = 0

    def __call__(self, episodes: Sequence[Episode]) -> list[TurnScores]:
        self._mistakes = 0
        return [self._episode(episode) for episode in episodes]

    def counters(self) -> dict[str, float]:
        return {"mistakes": float(getattr(self, "_mistakes", 0))}

    def _episode(self, episode: Episode) -> TurnScores:
        game = self.game()
        states = states_before(game, episode)
        scores: TurnScores = []
        for turn, state in zip(episode.turns, states, strict=True):
            if state is None or turn.action is None or not self.applies_to(turn.role):
                scores.append(None)
                continue
            values = game.move_values(state, turn.role)
            if turn.action not in values:
                scores.append(None)
                continue
            kept = float(values[turn.action] - max(values.values()))
            self._mistakes += kept < 0
            scores.append(kept)
        return scores


@hookimpl
def register_rewards(register):
    register("move-value", MoveValue)
