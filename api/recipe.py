"""The recipe contract: a named set of run settings, applied where the user set nothing.

A recipe is what a paper's, a benchmark's or a game's measured run trains with: config keys
in dotted form (``train.lr``, ``game_options.compact``) and their values, as ``--set`` would
give them. ``selfplay run --recipe NAME`` applies one; a game may name its own (`Game.recipe`),
which applies when no ``--recipe`` is given; ``--recipe none`` runs on the plain defaults.
What the user sets (a flag, ``--set``, a config file) always wins over a recipe, and a
recipe's settings that the run's objective does not read are left out with a note.

A recipe may start from another (``base``) and change a few keys, and may name its game
(``game`` among its settings), so ``selfplay run --recipe kuhn-poker`` plays Kuhn poker.
Recipes register through the ``register_recipes`` hook like every other plug-in, and
``selfplay recipes`` lists them; benchmarks/ runs the same objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The ``--recipe`` value that applies no recipe, not even the game's own.
NO_RECIPE = "none"


@dataclass(frozen=True)
class Recipe:
    """``name``, one line of ``description`` (what it is for, and where it was measured),
    the ``settings`` (dotted config keys to values) and the recipe it starts from."""

    name: str
    description: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    base: str | None = None

    def resolved(self, lookup: Callable[[str], Recipe]) -> dict[str, Any]:
        """Every setting, the base's first (recursively) and this recipe's over them."""
        settings: dict[str, Any] = {}
        seen = {self.name}
        chain: list[Recipe] = [self]
        while chain[-1].base is not None:
            base = lookup(chain[-1].base)
            if base.name in seen:
                raise ValueError(f"recipe {self.name!r} starts from itself through {base.name!r}")
            seen.add(base.name)
            chain.append(base)
        for recipe in reversed(chain):
            settings.update(recipe.settings)
        return settings
