"""Options of plug-ins: small pydantic models, and one way to explain a bad one to a user.

Every plug-in kind (games, rewards, verifiers, opponent samplers, estimators, objectives,
callbacks) declares its options as a pydantic ``Options`` class with ``extra="forbid"``; the
descriptions are what the listing commands print. A plug-in that takes one short argument on
the command line (``--opponent pool:0.5``, ``psro:nash``) names the field it fills in
``positional``. The invalid-move rules every game shares (`InvalidMoveRules`, the config's
``invalid_moves``) are here too; `selfplay.api.game` exports them beside `Game`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from selfplay.api.errors import ConfigError


class Options(BaseModel):
    """Options every plug-in accepts (none); plug-ins subclass this and add their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class InvalidMoveRules(BaseModel):
    """What happens when a player's output is not a legal action (shared by every game).

    ``allowance`` retries are granted with the reason shown to the player (TextArena style);
    the next invalid attempt forfeits the match: the offender gets ``penalty``, every other
    role ``bonus``. The SPIRAL preset is ``allowance=0, penalty=-1.5, bonus=0.5``. A penalty
    no better than a loss matters: with penalty equal to a loss, a side that is losing anyway
    stops caring about legality.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    allowance: int = Field(default=0, ge=0, description="Retries after an invalid move.")
    penalty: float = Field(default=-1.5, description="Payoff of the player who forfeits.")
    bonus: float = Field(default=0.5, description="Payoff of each other player on a forfeit.")

    @classmethod
    def preset(cls, name: Literal["spiral", "strict", "lenient"]) -> InvalidMoveRules:
        presets = {
            "spiral": cls(allowance=0, penalty=-1.5, bonus=0.5),
            "strict": cls(allowance=0, penalty=-2.0, bonus=0.0),
            "lenient": cls(allowance=2, penalty=-1.5, bonus=0.5),
        }
        return presets[name]


def explain(err: ValidationError, owner: str, section: str, fields: Any = ()) -> str:
    """One sentence per problem in ``err``.

    ``owner`` names the plug-in as a user knows it (``"tictactoe"``, ``"reward 'length'"``),
    ``section`` is where its options are set (``"game_options"``), and ``fields`` the valid
    option names (a dict of pydantic fields, or names), listed when a key is unknown; a bad
    value is followed by its option's description, which says its valid form.
    """
    valid = ", ".join(sorted(fields)) or "none"
    problems = []
    for problem in err.errors():
        key = ".".join(str(p) for p in problem["loc"]) or "(options)"
        if problem["type"] == "extra_forbidden":
            problems.append(f"{owner} has no option {key!r}; its options are: {valid}.")
            continue
        line = f"{section}.{key}: {problem['msg']} (got {problem.get('input')!r})."
        described = (
            getattr(fields.get(key), "description", None) if isinstance(fields, dict) else None
        )
        if described:
            line += f" {key}: {described}"
        problems.append(line)
    return " ".join(problems)


def parse_options(options_cls: type[BaseModel], owner: str, section: str, options: Any) -> Any:
    """``options_cls(**options)``, or a ConfigError whose message `explain` wrote."""
    try:
        return options_cls(**dict(options or {}))
    except ValidationError as err:
        raise ConfigError(explain(err, owner, section, options_cls.model_fields)) from None
