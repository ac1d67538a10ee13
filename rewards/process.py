"""Per-step scores from a verifier: each turn's answer is checked and scored on its own.

Dense where an outcome is sparse: a solver's intermediate answers, a proposer's stated answer,
a move's legality (the ``rules`` verifier). The verifier is named (``selfplay verifiers``) and
built with ``verifier_options``. A turn's candidate is its parsed action (or its whole text:
``candidate=text`` for the ``rules`` verifier, which parses it the way the game does); the
reference is looked up by ``reference`` in the episode's ``extra``, then its final ``state``
(no key: an empty reference, for verifiers that need none). The verifier also receives
``game``, ``role``, the ``episode``, the turn's index and ``state``, the state the turn was
played in, replayed from the match's seed.

``pass`` scores ``passed``; ``fail`` and ``timeout`` score ``failed`` (a candidate that makes
the checker time out is a bad answer); an invalid attempt, which has no action, scores
``failed``. An ``error`` verdict is the checker's fault, not the turn's: it is ``None``
(masked) and counted, never a 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from selfplay.api.game import GameState
from selfplay.api.reward import Reward, RewardError, RewardOptions, TurnScores
from selfplay.api.types import Episode
from selfplay.plugins.hookspecs import hookimpl


class ProcessOptions(RewardOptions):
    verifier: str = Field(description="Registered verifier that checks each turn.")
    verifier_options: dict[str, Any] = Field(
        default_factory=dict, description="Options of that verifier."
    )
    candidate: Literal["action", "text"] = Field(
        default="action", description="Check the turn's parsed action or its whole text."
    )
    reference: str | None = Field(
        default=None, description="Key of the reference answer in the episode's extra or state."
    )
    passed: float = Field(default=1.0, description="Score of a turn that passes.")
    failed: float = Field(default=0.0, description="Score of a turn that fails or times out.")


class Process(Reward):
    """Scores every turn with a verifier: pass, fail, or masked when the checker errs."""

    name = "process"
    Options = ProcessOptions
    per_turn = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        from selfplay.plugins.manager import registries

        factory = registries().verifiers.get(self.options.verifier)
        self.verifier = factory(**self.options.verifier_options)
        self._counts = dict.fromkeys(("checked", "error"), 0)

    def __call__(self, episodes: Sequence[Episode]) -> list[TurnScores]:
        self._counts = dict.fromkeys(self._counts, 0)
        return [self._episode(ep) for ep in episodes]

    def counters(self) -> dict[str, float]:
        return {key: float(value) for key, value in self._counts.items()}

    def _episode(self, episode: Episode) -> TurnScores:
        reference = self._reference(episode)
        states = states_before(self.context.game, episode)
        return [
            self._turn(episode, i, reference, states[i]) if self.applies_to(turn.role) else None
            for i, turn in enumerate(episode.turns)
        ]

    def _turn(
        self, episode: Episode, index: int, reference: str, state: GameState | None
    ) -> float | None:
        turn = episode.turns[index]
        candidate = turn.action if self.options.candidate == "action" else turn.text
        if candidate is None:
            return self.options.failed
        verdict = self.verifier.verify(
            candidate,
            reference,
            game=self.context.game,
            state=state,
            role=turn.role,
            episode=episode,
            turn=index,
        )
        self._counts["checked"] += 1
        status = getattr(verdict, "status", None)
        if status == "pass":
            return self.options.passed
        if status in ("fail", "timeout"):
            return self.options.failed
        self._counts["error"] += 1
        return None

    def _reference(self, episode: Episode) -> str:
        key = self.options.reference
        if key is None:
            return ""
        for source in (episode.extra, episode.state):
            if key in source:
                return str(source[key])
        raise RewardError(
            f"process: episode {episode.game} (seed {episode.seed}) has no {key!r} in its "
            f"extra ({', '.join(sorted(episode.extra)) or 'empty'}) or state "
            f"({', '.join(sorted(episode.state)) or 'empty'}); set "
            "reward_options.process.reference to one of those keys."
        )


def states_before(game: Any, episode: Episode) -> list[GameState | None]:
    """The state each turn of ``episode`` was played in, replayed from its start (None where
    unknown: no game, another game, a record that does not replay)."""
    states: list[GameState | None] = [None] * len(episode.turns)
    if game is None or game.name != episode.game:
        return states
    state = game.start(episode)  # a branch starts where it branched off
    for i, turn in enumerate(episode.turns):
        states[i] = state
        try:
            state = game.step(state, turn.role, turn.text)
        except ValueError:  # the record does not replay (another game's options)
            break
    return states


@hookimpl
def register_rewards(register):
    register("process", Process)
