"""Exact evaluation of OpenSpiel games small enough to list their information sets.

A game is tabular here when it has two players, is zero-sum, names its information states
(``information_state_string``) and has at most `MAX_INFO_SETS` of them, found by walking its
whole tree (chance outcomes included) at most once per game string. Of the documented games
kuhn_poker (12 information sets) and leduc_poker (936) are; liars_dice, tic_tac_toe and
connect_four have too many, and bargaining is general-sum.

Keys are ``role|information state string``; actions are named as the adapter's ``legal``
returns them. Exploitability is OpenSpiel's exact NashConv (``open_spiel.python.algorithms.
exploitability.nash_conv``: best responses by tree traversal) divided by the number of players,
of one table playing every seat.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from selfplay.api.game import InfoSet, Policy, PolicyTable
from selfplay.api.types import Role
from selfplay.games.openspiel.spiel import labels, pyspiel

MAX_INFO_SETS = 1000  # leduc_poker's 936 fit; a language model scores every one of them
# the state an InfoSet carries: (history, decisions so far) -> the adapter's GameState
MakeState = Callable[[tuple[int, ...], int], Any]


def key_of(spiel_state: Any, player: int) -> str:
    return f"player_{player}|{spiel_state.information_state_string(player)}"


def might_be_tabular(spiel_game: Any) -> bool:
    """The cheap conditions: two players, zero-sum, information states named."""
    spiel = pyspiel()
    kind = spiel_game.get_type()
    return (
        spiel_game.num_players() == 2
        and kind.utility == spiel.GameType.Utility.ZERO_SUM
        and kind.provides_information_state_string
    )


def information_sets(
    spiel_game: Any, make_state: MakeState, limit: int = MAX_INFO_SETS
) -> list[InfoSet] | None:
    """Every information set of ``spiel_game`` in the order first met, or None past ``limit``."""
    found: dict[str, InfoSet] = {}
    # depth-first: (state, history, decisions so far, each player's previous (key, action))
    stack: list[tuple[Any, tuple[int, ...], int, dict[int, tuple[str, str]]]] = [
        (spiel_game.new_initial_state(), (), 0, {})
    ]
    while stack:
        state, history, turn, previous = stack.pop()
        if state.is_terminal():
            continue
        if state.is_chance_node():
            moves = [(a, turn, previous) for a, _ in state.chance_outcomes()]
        else:
            player = state.current_player()
            key = key_of(state, player)
            named = labels(state, player)
            if key not in found:
                if len(found) >= limit:
                    return None
                role: Role = f"player_{player}"
                found[key] = InfoSet(
                    key, role, make_state(history, turn), tuple(named), previous.get(player)
                )
            moves = [(a, turn + 1, {**previous, player: (key, text)}) for text, a in named.items()]
        for action, after, seen in reversed(moves):
            child = state.clone()
            child.apply_action(action)
            stack.append((child, (*history, action), after, seen))
    return list(found.values())


def nash_conv(spiel_game: Any, table: PolicyTable) -> float:
    """NashConv of ``table`` playing every seat, by OpenSpiel's exact best responses."""
    from open_spiel.python import policy as spiel_policy
    from open_spiel.python.algorithms import exploitability

    class TablePolicy(spiel_policy.Policy):
        def action_probabilities(self, state: Any, player_id: int | None = None) -> dict:
            player = state.current_player() if player_id is None else player_id
            row: Mapping[str, float] = table[key_of(state, player)]
            return {a: float(row[text]) for text, a in labels(state, player).items()}

    players = list(range(spiel_game.num_players()))
    return float(exploitability.nash_conv(spiel_game, TablePolicy(spiel_game, players)))


def exploitability(spiel_game: Any, table: Policy) -> float:
    return nash_conv(spiel_game, dict(table)) / spiel_game.num_players()
