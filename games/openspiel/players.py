"""Scripted players of OpenSpiel games: ``random``, ``mcts``, and Leduc poker's ``rank``.

``mcts`` is OpenSpiel's Monte-Carlo tree search (``open_spiel.python.algorithms.mcts``: UCT
with random rollouts), ``mcts_simulations`` simulations per move, its randomness seeded from the
match's generator. Tree search reads a whole state, so on a game with hidden information it
searches a state resampled to agree with what the player knows (OpenSpiel's
``resample_from_infostate``: the opponent's cards drawn anew), never the true one; a game with
hidden information that cannot resample (liars_dice) has no ``mcts`` player.

``rank`` plays Leduc poker by the strength of its hand alone, the same way every time: it
raises a pair with the public card, or the top card (a King in the two-player game) before the
public card is dealt; checks and calls with a middle card, or a top card that missed the
public card; with a Jack it checks, and folds to a raise. It is a player whose moves depend
on its card, which neither ``random`` nor self-play from a ``random`` cold start gives
(benchmarks/RESULTS.md, "Leduc poker: the policy never read its card"); its exploitability is
in tests/test_openspiel.py.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from selfplay.api.game import Game, GameState
from selfplay.api.types import Role
from selfplay.games.openspiel.spiel import labels, native_stderr_quiet, pyspiel

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
    return game.answer(names[action])


def leduc_rank_player(game: Any, state: GameState, role: Role, rng: random.Random) -> str:
    position = game.position(state)
    player = game.roles.index(role)
    rank, public = position.private_card(player) // 2, position.public_card()
    top = position.get_game().num_players()  # Leduc has players + 1 ranks: the top is players
    if public >= 0:
        strength = 2 if rank == public // 2 else 1 if rank == top else 0
    else:
        strength = 2 if rank == top else 1 if rank > 0 else 0
    legal = labels(position, player)
    wanted = ("Fold", "Call", "Raise")[strength]
    if wanted == "Fold" and "Call" in legal and not _facing_raise(position):
        wanted = "Call"  # check rather than fold for nothing
    return game.answer(wanted if wanted in legal else "Call")


def _facing_raise(position: Any) -> bool:
    bets = position.round1() if position.round() == 1 else position.round2()
    return bool(bets) and bets[-1] == 2


# scripted players particular to one game (by OpenSpiel's short name)
GAME_PLAYERS = {"leduc_poker": {"rank": leduc_rank_player}}


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
        with native_stderr_quiet():  # a game that cannot resample says so in C++ too
            state.resample_from_infostate(state.current_player(), sampler)
    except spiel.SpielError:
        return False
    return True
