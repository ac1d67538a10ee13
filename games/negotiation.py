"""Negotiation: two traders swap resources; whoever's inventory gains more value wins.

The mechanism of SPIRAL's simple negotiation. Each player starts with a public inventory of
four resources and private per-unit values for them, both drawn from the seed. Players
alternate for ``max_turns`` moves; a move is an offer, accepting or denying the offer the
opponent made on their last turn, or passing. An offer lasts one turn. When the turns run out
each inventory is valued by its owner's values: the larger gain wins (+1/-1), equal gains draw.

Grammar of an offer, stated in the prompt: ``[offer 2 wood 1 stone for 3 gold]`` — the offerer
gives what comes before ``for`` and gets what comes after. Quantities are whole numbers; each
resource appears at most once and never on both sides. Private values come last in the prompt,
where a small model is most likely to use them.
"""

from __future__ import annotations

import random
import re
from contextlib import suppress
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from selfplay.api.game import Game, GameOptions, GameState, InvalidAction, Player
from selfplay.api.types import Message, Payoffs, Role
from selfplay.games.move_names import read_name
from selfplay.plugins.hookspecs import hookimpl

RESOURCES = ("wood", "stone", "grain", "gold")
ROLES = ("player_0", "player_1")
MAX_QUANTITY = 99
RECENT = 4  # history entries shown in the prompt
Bundle = dict[str, int]
RULES = (
    "You are {role} in a trading game with wood, stone, grain and gold. Inventories are public; "
    "your values per unit are private. Players alternate, {turns} moves in all. When they run "
    "out, you win if your inventory value (by your values) rose more than the opponent's (by "
    "theirs). Answer with one action in square brackets: [offer 2 wood 1 stone for 3 gold] "
    "(you give 2 wood and 1 stone, you get 3 gold), [accept] (take the offer the opponent made "
    "on their last move), [deny] (refuse it) or [pass]. An offer lasts one move."
)


class Offer(BaseModel):
    """A standing offer: ``by`` gives ``give`` and gets ``get``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    by: Role
    give: Bundle
    get: Bundle


class NegotiationOptions(GameOptions):
    max_turns: int = Field(
        default=10, ge=1, le=200, description="Moves in all (both players); then values decide."
    )


class NegotiationState(GameState):
    inventories: dict[Role, Bundle]
    start: dict[Role, Bundle]  # inventories before the first move, to measure gains
    values: dict[Role, Bundle]  # private per-unit values
    offer: Offer | None = None
    history: tuple[tuple[Role, str], ...] = ()  # (role, canonical action)
    trades: int = 0


# ---- offers: parsing, formatting, arithmetic ----------------------------------------------------


def format_bundle(bundle: Bundle) -> str:
    return " ".join(f"{bundle[r]} {r}" for r in RESOURCES if bundle.get(r))


def format_offer(give: Bundle, get: Bundle) -> str:
    return f"offer {format_bundle(give)} for {format_bundle(get)}"


def _bundle(tokens: list[str], side: str) -> Bundle:
    if not tokens or len(tokens) % 2:
        raise InvalidAction(f"the {side} side needs pairs like '2 wood'.")
    bundle: Bundle = {}
    for count, name in zip(tokens[::2], tokens[1::2], strict=True):
        resource = name[:-1] if name.endswith("s") and name[:-1] in RESOURCES else name
        if resource not in RESOURCES:
            raise InvalidAction(f"{name[:20]!r} is not a resource (wood, stone, grain, gold).")
        if not count.isdigit() or not 1 <= int(count) <= MAX_QUANTITY:
            raise InvalidAction(f"{count[:20]!r} is not a quantity from 1 to {MAX_QUANTITY}.")
        if resource in bundle:
            raise InvalidAction(f"{resource} appears twice on the {side} side.")
        bundle[resource] = int(count)
    return bundle


def parse_offer(body: str) -> tuple[Bundle, Bundle]:
    """``'offer 2 wood 1 stone for 3 gold'`` -> ({'wood': 2, 'stone': 1}, {'gold': 3})."""
    words = re.sub(r"[,;:]", " ", body.lower()).split()
    if words[:1] != ["offer"] or words.count("for") != 1:
        raise InvalidAction("write an offer as [offer 2 wood 1 stone for 3 gold].")
    split = words.index("for")
    give, get = _bundle(words[1:split], "give"), _bundle(words[split + 1 :], "get")
    if set(give) & set(get):
        raise InvalidAction("a resource cannot be on both sides of an offer.")
    return give, get


def affords(inventory: Bundle, bundle: Bundle) -> bool:
    return all(inventory.get(r, 0) >= n for r, n in bundle.items())


def value(inventory: Bundle, values: Bundle) -> int:
    return sum(values[r] * inventory.get(r, 0) for r in RESOURCES)


def _moved(inventory: Bundle, out: Bundle, into: Bundle) -> Bundle:
    return {r: inventory.get(r, 0) - out.get(r, 0) + into.get(r, 0) for r in RESOURCES}


def other(role: Role) -> Role:
    return ROLES[1 - ROLES.index(role)]


# ---- scripted players --------------------------------------------------------------------------


def random_player(game: Game, state: NegotiationState, role: Role, rng: random.Random) -> str:
    """Accepts an affordable offer a third of the time, else offers half the time, else passes."""
    inventory = state.inventories[role]
    offer = state.offer
    if offer is not None and rng.random() < 1 / 3 and affords(inventory, offer.get):
        return "[accept]"
    if offer is not None and rng.random() < 1 / 4:
        return "[deny]"
    owned = [r for r in RESOURCES if inventory[r] > 0]
    if not owned or rng.random() < 0.5:
        return "[pass]"
    give_kinds = rng.sample(owned, rng.randint(1, min(2, len(owned))))
    wanted = [r for r in RESOURCES if r not in give_kinds]
    get_kinds = rng.sample(wanted, rng.randint(1, min(2, len(wanted))))
    give = {r: rng.randint(1, min(3, inventory[r])) for r in give_kinds}
    get = {r: rng.randint(1, 3) for r in get_kinds}
    return f"[{format_offer(give, get)}]"


class Negotiation(Game):
    name = "negotiation"
    roles = ROLES
    description = (
        "Two traders swap wood, stone, grain and gold; the larger gain in private value wins."
    )
    Options = NegotiationOptions
    State = NegotiationState
    # Offers are longer than the default 40-character answer span allows.
    answer_pattern = re.compile(r"\[([^\[\]\n]{1,80})\]")
    answer_hint = "[pass], [accept], [deny] or [offer 2 wood for 1 gold]"
    players: ClassVar[dict[str, Player]] = {"random": random_player}

    def initial(self, seed: int, rng: random.Random) -> NegotiationState:
        inventories = {r: {k: rng.randint(1, 9) for k in RESOURCES} for r in ROLES}
        values = {r: {k: rng.randint(1, 9) for k in RESOURCES} for r in ROLES}
        start = {r: dict(bundle) for r, bundle in inventories.items()}
        return NegotiationState(seed=seed, inventories=inventories, start=start, values=values)

    def current_role(self, state: NegotiationState) -> Role | None:
        return ROLES[state.turn % 2]

    def prompt(self, state: NegotiationState, role: Role) -> list[Message]:
        mine, theirs = state.inventories[role], state.inventories[other(role)]
        lines = [
            f"Move {state.turn + 1} of {self.options.max_turns}.",
            f"You have {format_bundle(mine) or 'nothing'}; "
            f"the opponent has {format_bundle(theirs) or 'nothing'}.",
        ]
        recent = state.history[-RECENT:]
        if recent:
            said = "; ".join(f"{'you' if r == role else 'opponent'}: {a}" for r, a in recent)
            lines.append(f"Recent: {said}.")
        if state.offer is not None and state.offer.by != role:
            give, get = format_bundle(state.offer.get), format_bundle(state.offer.give)
            lines.append(f"Opponent's offer to you: you give {give}, you get {get}.")
        values = state.values[role]
        worth = ", ".join(f"{r} {values[r]}" for r in RESOURCES)
        lines.append(
            f"Your values per unit: {worth}. Your value: {value(mine, values)} "
            f"(start {value(state.start[role], values)})."
        )
        return [
            Message("system", RULES.format(role=role, turns=self.options.max_turns)),
            Message("user", "\n".join(lines)),
        ]

    def legal(self, state: NegotiationState, role: Role, action: str) -> str:
        move = " ".join(read_name(action).split())
        if move in ("pass", "accept", "deny"):
            return self._check_reply(state, role, move)
        if not move.startswith("offer"):
            raise InvalidAction(
                f"{action[:20]!r} is not an action; answer [offer 2 wood for 1 gold], [accept], "
                "[deny] or [pass]."
            )
        give, get = parse_offer(move)
        if not affords(state.inventories[role], give):
            raise InvalidAction(f"you cannot give {format_bundle(give)}: you have too little.")
        return format_offer(give, get)

    def _check_reply(self, state: NegotiationState, role: Role, move: str) -> str:
        offer = state.offer
        if move == "pass":
            return move
        if offer is None or offer.by == role:
            raise InvalidAction(f"there is no offer to {move}; make an offer or [pass].")
        if move == "accept" and not affords(state.inventories[role], offer.get):
            raise InvalidAction(f"you cannot accept: you do not have {format_bundle(offer.get)}.")
        if move == "accept" and not affords(state.inventories[offer.by], offer.give):
            raise InvalidAction("you cannot accept: the opponent no longer has what it offered.")
        return move

    def apply(self, state: NegotiationState, role: Role, action: str) -> NegotiationState:
        update: dict[str, Any] = {"offer": None, "history": (*state.history, (role, action))}
        if action.startswith("offer"):
            give, get = parse_offer(action)
            update["offer"] = Offer(by=role, give=give, get=get)
        elif action == "accept":
            offer = state.offer
            flows = {offer.by: (offer.give, offer.get), role: (offer.get, offer.give)}
            inventories = {r: _moved(state.inventories[r], *flows[r]) for r in ROLES}
            update.update(inventories=inventories, trades=state.trades + 1)
        return state.model_copy(update=update)

    def result(self, state: NegotiationState) -> Payoffs | None:
        """Decided by value gains once the moves run out (not a draw, unlike the default)."""
        if state.turn < self.options.max_turns:
            return None
        gains = {
            r: value(state.inventories[r], state.values[r]) - value(state.start[r], state.values[r])
            for r in ROLES
        }
        if gains["player_0"] == gains["player_1"]:
            return dict.fromkeys(ROLES, 0.0)
        leader = max(ROLES, key=gains.__getitem__)
        return {r: (1.0 if r == leader else -1.0) for r in ROLES}

    def legal_actions(self, state: NegotiationState, role: Role) -> list[str]:
        """A representative subset: the replies, [pass], and every affordable one-for-one swap."""
        actions = ["[pass]"]
        for reply in ("accept", "deny"):
            with suppress(InvalidAction):
                actions.append(f"[{self._check_reply(state, role, reply)}]")
        owned = [r for r in RESOURCES if state.inventories[role][r] > 0]
        swaps = [f"[offer 1 {g} for 1 {t}]" for g in owned for t in RESOURCES if t != g]
        return actions + swaps

    def signals(self, state: NegotiationState) -> dict[str, float]:
        return {**super().signals(state), "trades": float(state.trades)}


@hookimpl
def register_games(register):
    register(Negotiation)
