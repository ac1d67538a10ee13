"""`selfplay new game NAME`: a complete game-plugin distribution, rendered from package data.

The template lives in ``selfplay/templates/game-plugin``. Every file there ends in ``.tmpl``
and is filled with `string.Template` (``${name}``, ``${package}``, ...); a folder called
``__package__`` becomes the import package. No network and no templating service are needed,
and a test renders, installs, tests and trains the result, so the template cannot rot.

The output is written to a hidden sibling folder first and renamed into place, so a failure
never leaves a half-written plugin behind, and an existing folder is never overwritten.
"""

from __future__ import annotations

import os
import re
import shutil
import string
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from selfplay import __version__
from selfplay.api.errors import ConfigError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

TEMPLATE = "game-plugin"
SUFFIX = ".tmpl"
PACKAGE_FOLDER = "__package__"
# Lowercase kebab-case starting with a letter, so that the import package and class name
# derived from it are valid Python identifiers.
NAME_RULE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class ScaffoldError(ConfigError):
    """`selfplay new` cannot create what was asked; the message names the value and the fix."""


def check_name(name: str) -> str:
    if not NAME_RULE.match(name):
        raise ScaffoldError(
            f"Game name {name!r} is not lowercase kebab-case: use lowercase letters, digits and "
            "single hyphens, starting with a letter (for example 'my-duel')."
        )
    return name


def _check_free(name: str) -> None:
    """Two plugins registering one game name cannot both load: refuse a taken name now."""
    from selfplay.plugins.manager import registries

    games = registries().games
    if name in games:
        raise ScaffoldError(
            f"A game named {name!r} is already registered (by {games.entries[name].plugin}); "
            "choose another name."
        )


def template_values(name: str) -> dict[str, str]:
    """What the template's ``${...}`` placeholders become for the game ``name``."""
    words = check_name(name).split("-")
    return {
        "name": name,
        "module": "_".join(words),
        "package": "selfplay_plugin_" + "_".join(words),
        "distribution": f"selfplay-plugin-{name}",
        "class_name": "".join(word.capitalize() for word in words),
        "title": " ".join(words).capitalize(),
        "summary": "a race to a target number for two roles.",
        "selfplay_version": __version__,
    }


def render_game_plugin(name: str, into: Path | str = ".") -> Path:
    """Render the game-plugin template as ``into/selfplay-plugin-NAME``; returns that folder."""
    values = template_values(name)
    _check_free(name)
    into = Path(into)
    target = into / values["distribution"]
    if target.exists():
        raise ScaffoldError(
            f"{target} already exists; remove it or choose another folder with --dir."
        )
    staging = into / f".{values['distribution']}.tmp"
    try:
        into.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        for parts, source in template_files(resources.files("selfplay.templates") / TEMPLATE):
            _write(staging, parts, source, values)
        os.replace(staging, target)
    except OSError as err:
        shutil.rmtree(staging, ignore_errors=True)
        raise ScaffoldError(f"Cannot create {target}: {err.strerror or err}.") from None
    return target


def template_files(
    folder: Traversable, parts: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Traversable]]:
    """Every ``.tmpl`` file under ``folder``, with its path parts relative to ``folder``."""
    for child in sorted(folder.iterdir(), key=lambda c: c.name):
        if child.is_dir() and child.name != "__pycache__":
            yield from template_files(child, (*parts, child.name))
        elif child.name.endswith(SUFFIX):
            yield (*parts, child.name), child


def _write(root: Path, parts: tuple[str, ...], source: Traversable, values: dict[str, str]) -> None:
    names = [values["package"] if part == PACKAGE_FOLDER else part for part in parts]
    names[-1] = names[-1].removesuffix(SUFFIX)
    path = root.joinpath(*names)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = string.Template(source.read_text(encoding="utf-8")).substitute(values)
    path.write_text(text, encoding="utf-8")
