"""Any OpenSpiel game as a selfplay game: ``--game openspiel:NAME`` or ``openspiel:NAME(k=v,...)``.

With the optional extra installed (``pip install "selfplay-rl[openspiel]"``), the ``openspiel``
game family turns an OpenSpiel game string (``leduc_poker``, ``leduc_poker(players=3)``, as
``pyspiel.load_game`` reads it) into a Game class on first use; nothing imports OpenSpiel
before that. The mapping onto our contract:

- roles: OpenSpiel's players 0..n-1 are ``player_0``..``player_{n-1}``; a game whose players
  move simultaneously (matrix games) is played turn by turn through OpenSpiel's own
  ``convert_to_turn_based``, which hides each move until the round is over;
- prompt: the game's rules (games/openspiel/rules.py; a generic line naming the game for the
  others), then what the player knows: the information-state string in a game with hidden
  information, the observation string (a board) in one without, or for the games with a
  readable view (leduc_poker; ``game_options.view``, games/openspiel/views.py) the same in
  words; then the legal actions as OpenSpiel names them (``state.action_to_string``), each in
  square brackets;
- actions: the last ``[...]`` span of the reply, compared with the legal actions' texts without
  regard to case or spacing; anything else is an invalid move under our invalid-move rules;
- chance: drawn as soon as a match reaches a chance node, from a generator seeded by the
  match's seed (games/openspiel/spiel.py), so a match replays from its seed;
- outcome: OpenSpiel's returns; ``zero_sum`` is True exactly when OpenSpiel calls the game
  zero-sum: general-sum (bargaining, matrix_pd) and constant-sum games are played with
  ``zero_sum = False``;
- scripted players: ``random``, ``mcts``, and Leduc poker's ``rank``
  (games/openspiel/players.py);
- phrasings (games/phrasing.py): ``reworded`` for every game; ``no-menu`` and ``obfuscated`` for
  the documented games and those the evaluation suites play (games/openspiel/phrasings.py);
- exact exploitability (``TabularGame``): for two-player zero-sum games with at most 1,000
  information sets (games/openspiel/tabular.py), so among the documented games kuhn_poker and
  leduc_poker; liars_dice, tic_tac_toe, connect_four and bargaining are not tabular.

A state is ``(seed, chance seed, history)``: the OpenSpiel state behind it is rebuilt from the
history (every action, chance outcomes included), with a cache of recent positions.
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any, ClassVar, Literal

from pydantic import Field, create_model

from selfplay.api.errors import ConfigError
from selfplay.api.game import (
    NO_MENU,
    OBFUSCATED,
    REWORDED,
    Game,
    GameOptions,
    GameState,
    InvalidAction,
    Player,
)
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games import tabular as tables
from selfplay.games.move_names import read_name
from selfplay.games.openspiel import tabular
from selfplay.games.openspiel.phrasings import (
    DISGUISES,
    MOVE_FORMATS,
    NO_MENU_EDITS,
    NO_MENU_RULE,
    Disguise,
)
from selfplay.games.openspiel.phrasings import REWORDED as REWORDED_WORDS
from selfplay.games.openspiel.players import (
    GAME_PLAYERS,
    can_search,
    mcts_player,
    random_player,
)
from selfplay.games.openspiel.rules import RULES, rules_text
from selfplay.games.openspiel.spiel import (
    INSTALL_HINT,
    Positions,
    draw_chance,
    labels,
    load,
    playable_names,
    pyspiel,
)
from selfplay.games.openspiel.views import readable
from selfplay.games.tabular import InfoSet, Policy, PolicyTable
from selfplay.plugins.hookspecs import hookimpl
from selfplay.plugins.registry import PluginError

FAMILY = "openspiel"
DOCUMENTED = tuple(RULES)  # the games with rules text, tested by check_game
ANSWER_RULE = (
    "Answer with exactly one of the legal actions in square brackets, for example {example}; "
    "the last bracketed part of your reply is taken as your action."
)
SHOWN_CHOICES = 12  # legal actions named in an invalid move's reason


class OpenSpielOptions(GameOptions):
    max_turns: int = Field(
        default=1000,
        ge=1,
        description="Moves after which the match is a draw (OpenSpiel games end themselves "
        "first: the default is the game's own longest match).",
    )
    mcts_simulations: int = Field(
        default=100, ge=1, description="Simulations per move of the mcts scripted player."
    )
    view: Literal["readable", "spiel"] = Field(
        default="readable",
        description="How the prompt shows what the player knows: 'readable' puts the games "
        "that have a rendering (leduc_poker) in words, the player's card last; 'spiel' shows "
        "OpenSpiel's information-state or observation string as it is.",
    )
    max_prompt_chars: int = Field(
        default=8000,
        ge=1,
        description="Longest prompt (rules, state and legal actions) a match may show; a longer "
        "one stops the run (exit 2) rather than overflow the model's context.",
    )


class OpenSpielState(GameState):
    chance: int = 0  # seeds the chance outcomes, drawn from the match's generator
    history: tuple[int, ...] = ()  # every OpenSpiel action so far, chance outcomes included


class OpenSpielGame(Game):
    """Base of the per-game classes `game_class` makes; ``spiel`` is the OpenSpiel game."""

    spiel: ClassVar[Any]
    short_name: ClassVar[str]
    member: ClassVar[str]  # the game string it was made from
    State = OpenSpielState
    Options = OpenSpielOptions
    lists_every_move = True
    answer_hint = "[action] (one of the legal actions, in square brackets)"
    players: ClassVar[dict[str, Player]] = {"random": random_player}
    phrasings: ClassVar[dict[str, dict[str, str]]] = {REWORDED: REWORDED_WORDS}

    def __init__(self, options: Any = None, rules: Any = None, **kwargs: Any) -> None:
        super().__init__(options, rules, **kwargs)
        spiel_view = self.options.view == "spiel" and readable(self.short_name, "readable")
        if self.options.phrasing == OBFUSCATED and spiel_view:  # the disguise renames words
            raise ConfigError(
                f"{self.name}'s obfuscated phrasing renames its readable view; OpenSpiel's "
                "own string (game_options.view=spiel) shows what its rules do not explain. "
                "Leave game_options.view at readable, or choose another phrasing."
            )
        self.positions = Positions(self.spiel)
        first = self.initial(0, random.Random(0))
        if (role := self.current_role(first)) is not None:
            self.prompt(first, role)  # a prompt too long for the limit stops here, not mid-run

    def position(self, state: OpenSpielState) -> Any:
        """The OpenSpiel state behind ``state`` (shared: clone it before changing it)."""
        return self.positions.at(state.history)

    def _after_chance(self, state: OpenSpielState) -> OpenSpielState:
        history = state.history
        position = self.positions.at(history)
        while position.is_chance_node():
            history = (*history, draw_chance(position, state.chance, len(history)))
            position = self.positions.at(history)
        return state if history == state.history else state.model_copy(update={"history": history})

    def initial(self, seed: int, rng: random.Random) -> OpenSpielState:
        return self._after_chance(OpenSpielState(seed=seed, chance=rng.getrandbits(63)))

    def current_role(self, state: OpenSpielState) -> Role | None:
        position = self.position(state)
        if position.is_terminal():
            return None
        return self.roles[position.current_player()]

    def prompt(self, state: OpenSpielState, role: Role) -> list[Message]:
        player = self.roles.index(role)
        position = self.position(state)
        choices = list(labels(position, player))
        heading, seen = self._view(position, player)
        phrasing, rules = self.options.phrasing, self._rules()
        if phrasing == OBFUSCATED:
            rules, seen = self._disguise().rules, self._disguise().rename(seen)
        user = f"You are {role}.\n{heading}:\n{seen.rstrip()}"
        if phrasing == NO_MENU:
            for old, new in NO_MENU_EDITS.items():
                rules = rules.replace(old, new)
            rules = " ".join(filter(None, (rules, MOVE_FORMATS[self.member])))
            system = f"{rules}\n{NO_MENU_RULE}"
        else:
            system = f"{rules}\n{ANSWER_RULE.format(example=self.answer(choices[0]))}"
            user += "\nLegal actions: " + " ".join(self.answer(c) for c in choices)
        size = len(system) + len(user)
        if size > self.options.max_prompt_chars:
            raise ConfigError(
                f"{self.name}'s prompt for {role} is {size} characters ({len(choices)} legal "
                f"actions), over game_options.max_prompt_chars={self.options.max_prompt_chars}. "
                "Raise the limit if the model's context holds it, or pick a smaller variant."
            )
        return [Message("system", system), Message("user", user)]

    def _disguise(self) -> Disguise:
        return DISGUISES[self.member]

    def spelled(self, action: str) -> str:
        if self.options.phrasing == OBFUSCATED:
            return self._disguise().rename(action)
        return action

    def _rules(self) -> str:
        shown = readable(self.short_name, self.options.view)
        if shown is not None:
            return f"{RULES[self.short_name]} {shown[1]}"
        return rules_text(self.short_name, self.spiel.get_type().long_name)

    def _view(self, position: Any, player: int) -> tuple[str, str]:
        """What ``player`` knows: (heading, the text of it: in words, or OpenSpiel's)."""
        kind = self.spiel.get_type()
        if (shown := readable(self.short_name, self.options.view)) is not None:
            return "Your information state", shown[0](position, player)
        if not self.perfect_information and kind.provides_information_state_string:
            return "Your information state", position.information_state_string(player)
        if kind.provides_observation_string:
            return "Observation", position.observation_string(player)
        if kind.provides_information_state_string:
            return "Your information state", position.information_state_string(player)
        if self.perfect_information:
            return "State", str(position)
        return "State", "(OpenSpiel describes nothing of this state)"

    def legal(self, state: OpenSpielState, role: Role, action: str) -> str:
        choices = list(labels(self.position(state), self.roles.index(role)))
        wanted = " ".join(read_name(action).split())
        for choice in choices:
            if " ".join(self.spelled(choice).split()).lower() == wanted:
                return choice
        if self.options.phrasing == NO_MENU:  # a retry's reason lists no moves either
            raise InvalidAction(f"{action[:40]!r} is not a legal action now.")
        shown = " ".join(self.answer(c) for c in choices[:SHOWN_CHOICES])
        more = f" (and {len(choices) - SHOWN_CHOICES} more)" if len(choices) > SHOWN_CHOICES else ""
        raise InvalidAction(f"{action[:40]!r} is not a legal action now; answer {shown}{more}.")

    def apply(self, state: OpenSpielState, role: Role, action: str) -> OpenSpielState:
        chosen = labels(self.position(state), self.roles.index(role))[action]
        moved = state.model_copy(update={"history": (*state.history, chosen)})
        return self._after_chance(moved)

    def result(self, state: OpenSpielState) -> Payoffs | None:
        position = self.position(state)
        if not position.is_terminal():
            return None
        return {role: float(r) for role, r in zip(self.roles, position.returns(), strict=True)}

    def legal_actions(self, state: OpenSpielState, role: Role) -> list[str]:
        return [self.answer(c) for c in labels(self.position(state), self.roles.index(role))]

    # ---- its own match traces (api/tasks.py SpielMatch) ----------------------------------

    def spiel_game(self) -> str:
        return str(self.spiel)

    def spiel_actions(self, episode: Any) -> list[tuple[int, int]]:
        history = tuple(episode.state["history"])
        return [(self.positions.at(history[:k]).current_player(), a) for k, a in enumerate(history)]


class TabularOpenSpielGame(OpenSpielGame):
    """An OpenSpiel game small enough for exact exploitability (the TabularGame capability)."""

    info_sets: ClassVar[tuple[InfoSet, ...]]

    def information_sets(self) -> list[InfoSet]:
        if self.options.max_turns < self.spiel.max_game_length():
            raise ValueError(
                f"Exact evaluation needs the full game (max_turns={self.spiel.max_game_length()}"
                f"), got max_turns={self.options.max_turns}."
            )
        return list(self.info_sets)

    def exploitability(self, policy: Policy) -> float:
        table = tables.check_policy(self.information_sets(), policy)
        return tabular.exploitability(self.spiel, table)

    def average_policy(self, policies: Any, weights: Any) -> PolicyTable:
        return tables.average_policy(self.information_sets(), policies, weights)


def _info_state(history: tuple[int, ...], turn: int) -> OpenSpielState:
    return OpenSpielState(seed=0, history=history, turn=turn)


@cache
def game_class(member: str) -> type[OpenSpielGame]:
    """The Game class for an OpenSpiel game string (made once per string)."""
    spiel = load(member)
    kind = spiel.get_type()
    perfect = kind.information == pyspiel().GameType.Information.PERFECT_INFORMATION
    players = {"random": random_player}
    if can_search(spiel):
        players["mcts"] = mcts_player
    players.update(GAME_PLAYERS.get(kind.short_name, {}))
    infos = (
        tabular.information_sets(spiel, _info_state) if tabular.might_be_tabular(spiel) else None
    )
    longest = max(1, spiel.max_game_length())
    options = create_model(
        f"OpenSpielOptions[{member}]",
        __base__=OpenSpielOptions,
        max_turns=(
            int,
            Field(
                default=longest,
                ge=1,
                description=OpenSpielOptions.model_fields["max_turns"].description,
            ),
        ),
    )
    phrasings = {REWORDED: REWORDED_WORDS}
    if member in MOVE_FORMATS:
        phrasings[NO_MENU] = {}
    if member in DISGUISES:
        phrasings[OBFUSCATED] = {}
    attributes = {
        "__module__": __name__,
        "name": f"{FAMILY}:{member}",
        "short_name": kind.short_name,
        "member": member,
        "phrasings": phrasings,
        "spiel": spiel,
        "roles": tuple(f"player_{i}" for i in range(spiel.num_players())),
        "zero_sum": kind.utility == pyspiel().GameType.Utility.ZERO_SUM,
        "perfect_information": perfect,
        "players": players,
        "Options": options,
        "description": f"OpenSpiel's {kind.long_name} ({spiel.num_players()} players); "
        "answer a legal action in square brackets.",
    }
    base: type[OpenSpielGame] = OpenSpielGame
    if infos is not None:
        base, attributes["info_sets"] = TabularOpenSpielGame, tuple(infos)
    return type(f"OpenSpiel[{member}]", (base,), attributes)


class OpenSpielFamily:
    """``openspiel:<game string>``: every game of the installed OpenSpiel with turns."""

    def resolve(self, member: str) -> type[Game]:
        return game_class(member.strip())

    def members(self) -> list[str]:
        return playable_names()

    def summary(self) -> str:
        """One paragraph for `selfplay games`: the documented games, or how to install."""
        documented = ", ".join(f"{FAMILY}:{name}" for name in DOCUMENTED)
        try:
            count = len(playable_names())
        except PluginError:
            return f"{FAMILY}:NAME plays OpenSpiel games; it needs the extra: {INSTALL_HINT}."
        return (
            f"{FAMILY}:NAME plays any of OpenSpiel's {count} games, e.g. {documented} (documented "
            f"and tested); parameters as OpenSpiel writes them, e.g. {FAMILY}:leduc_poker"
            f"(players=3). `selfplay games --{FAMILY}` lists every name."
        )


@hookimpl
def register_game_families(register):
    register(FAMILY, OpenSpielFamily())
