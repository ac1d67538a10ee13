"""Scripted players of OpenSpiel games: ``random`` and ``mcts``.

``mcts`` is OpenSpiel's Monte-Carlo tree search (``open_spiel.python.algorithms.mcts``: UCT
with random rollouts), ``mcts_simulations`` simulations per move, its randomness seeded from the
match's generator. Tree search reads a whole state, so on a game with hidden information it
searches a state resampled to agree with what the player knows (OpenSpiel's
``resample_from_infostate``: the opponent's cards drawn anew), never the true one; a game with
hidden information that cannot resample (liars_dice) has no ``mcts`` player.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from selfplay.api.game import Game, GameState
from selfplay.api.types import Role
from selfplay.games.openspiel.spiel import labels, pyspiel

UCT_C = 2.0  # OpenSpiel's usual exploration constant
ROLLOUTS = 1  # random rollouts per leaf


def random_player(game: Game, state: GameState, role: Role, rng: random.Random) -> str:
    return rng.choice(game.legal_actions(state, role))


def mcts_player(game: Any, state: GameState, role: Role, rng: random.Random) -> str:
    from open_spiel.python.algorithms import mcts

    spiel = pyspiel()
    player = game.roles.index(role)
    position = game.position(state)
    if not game.perfect_information:
        sampler = spiel.UniformProbabilitySampler(rng.getrandbits(31), 0.0, 1.0)
        position = position.resample_from_infostate(player, sampler)
    evaluator = mcts.RandomRolloutEvaluator(ROLLOUTS, np.random.RandomState(rng.getrandbits(32)))
    bot = mcts.MCTSBot(
        game.spiel,
        UCT_C,
        game.options.mcts_simulations,
        evaluator,
        random_state=np.random.RandomState(rng.getrandbits(32)),
    )
    action = bot.step(position)
    names = {a: text for text, a in labels(game.position(state), player).items()}
    return f"[{names[action]}]"


def can_search(spiel_game: Any) -> bool:
    """Whether ``mcts`` can play ``spiel_game`` without reading hidden information."""
    spiel = pyspiel()
    kind = spiel_game.get_type()
    if kind.reward_model != spiel.GameType.RewardModel.TERMINAL:
        return False
    if kind.information == spiel.GameType.Information.PERFECT_INFORMATION:
        return True
    state = spiel_game.new_initial_state()
    while state.is_chance_node():  # the first decision, reached by chance's first outcomes
        state.apply_action(state.chance_outcomes()[0][0])
    if state.is_terminal():
        return False
    try:
        sampler = spiel.UniformProbabilitySampler(0, 0.0, 1.0)
        state.resample_from_infostate(state.current_player(), sampler)
    except spiel.SpielError:
        return False
    return True
