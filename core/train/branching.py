"""Branches: a match played on several times from one of its positions, for a sharper signal.

A finished match says only who won; every move in it shares that one return. Credit for a
single move needs the same position played on with different moves: the idea of the "vine"
rollouts of TRPO (Schulman et al., 2015, section 5.2) and of VinePPO (Kazemnejad et al., 2024),
which estimate the value of a position from several continuations of it. Here, after an
iteration's matches are played, ``branches.positions`` of the learner's turns are picked at
random (with several learners, among every learner's turns); from the position before each,
``branches.matches`` matches are played to the end with the same seat holders (each learner
trains on its own turns in them). The first moves of those matches share one prompt, so a
per-position baseline (RAE's ``per_state``, GRPO's groups) compares them with one another:
in tic-tac-toe a block against a missed block, rather than a won match against a lost one.

A position is rebuilt by replaying the match from its seed: ``reset(seed)`` and then every
earlier turn's text through ``judge``. Games draw chance only in ``initial`` (api/game.py), so
the replay is exact; `selfplay.testing.check_game` tests that contract. Branch matches train the
learner, and are marked in ``Episode.extra["branch"]`` (the match and turn they came from, and
the position as JSON, from which `Game.start` replays them);
callbacks see them beside the full matches; the training metrics and episodes.jsonl keep to
the iteration's full matches.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from selfplay.api.errors import PluginFault, describe
from selfplay.api.game import Game, GameState
from selfplay.api.policy import Policy
from selfplay.api.sampler import is_learner
from selfplay.api.types import Episode
from selfplay.core.config import BranchConfig
from selfplay.core.rollout import VoidMatch, play

__all__ = ["is_branch", "play_branches", "replay"]


def is_branch(episode: Episode) -> bool:
    return "branch" in episode.extra


def replay(game: Game, episode: Episode, turn: int) -> GameState:
    """The state of ``episode`` before its turn ``turn``: its start (``Game.start``: the seed's
    reset, or a branch's position), then the earlier texts."""
    state = game.start(episode)
    for earlier in episode.turns[:turn]:
        state, _ = game.judge(state, earlier.role, earlier.text)
    return state


def play_branches(
    game: Game,
    played: Sequence[Episode],
    policy: Callable[[str], Policy],
    config: BranchConfig,
    seed: str,
    errors: list[VoidMatch] | None = None,
) -> list[Episode]:
    """``config.matches`` matches from each of ``config.positions`` of the learners' turns.

    ``policy`` resolves a seat holder's name; ``seed`` names the draw (the run's seed, the
    iteration and the process), so a run replays its branches exactly.
    """
    if not config.positions:
        return []  # off: nothing scanned, every iteration of the default run
    mine = [
        (episode, i)
        for episode in played
        if not is_branch(episode)
        for i, turn in enumerate(episode.turns)
        if is_learner(turn.seat)
    ]
    if not mine:
        return []
    rng = random.Random(f"selfplay-branches-{seed}")
    starts, seatings, seeds, origins = [], [], [], []
    for episode, turn in (rng.choice(mine) for _ in range(config.positions)):
        state = _rebuilt(game, episode, turn)
        start = state.model_dump_json()  # what replays the branch (`Game.start`)
        seating = {role: policy(holder) for role, holder in episode.seats.items()}
        for _ in range(config.matches):
            starts.append(state)
            seatings.append(seating)
            seeds.append(rng.getrandbits(62))  # the players' sampling noise differs per match
            origins.append({"seed": episode.seed, "turn": turn, "start": start})
    branches = play(game, seatings, seeds, starts=starts, errors=errors)
    origin_of = dict(zip(seeds, origins, strict=True))
    return [_marked(branch, origin_of[branch.seed]) for branch in branches]


def _rebuilt(game: Game, episode: Episode, turn: int) -> GameState:
    """``replay``, checked: the rebuilt position must ask what the match asked."""
    asked = episode.turns[turn]
    try:
        state = replay(game, episode, turn)
        same = tuple(game.observe(state, asked.role)) == asked.prompt
    except Exception as err:
        raise PluginFault(
            f"Game {game.name!r} raised {describe(err)} while replaying seed {episode.seed} "
            f"to turn {turn} for branches.positions; set branches.positions=0, or fix the game."
        ) from err
    if not same:
        raise PluginFault(
            f"Game {game.name!r} does not replay from its seed: seed {episode.seed} replayed "
            f"to turn {turn} asks another prompt than the match did. branches.positions needs "
            "chance drawn only in initial(); set it to 0 for this game."
        )
    return state


def _marked(episode: Episode, origin: dict[str, int]) -> Episode:
    episode.extra["branch"] = origin  # a fresh dict: play() made this episode
    return episode
