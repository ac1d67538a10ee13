"""`selfplay new KIND NAME`: a complete plug-in distribution, rendered from package data.

KIND is ``game``, ``objective``, ``reward`` or ``sampler``. The templates live in
``selfplay/templates/``: ``common/`` (the pyproject every plug-in shares) and one folder per
kind (its README, its package, its tests). Every file there ends in ``.tmpl`` and is filled
with `string.Template` (``${name}``, ``${package}``, ...); a folder called ``__package__``
becomes the import package. No network and no templating service are needed, and a test
renders, installs, tests and trains each kind, so the templates cannot rot; docs/plugins.md
shows them as rendered.

The output is written to a hidden sibling folder first and renamed into place, so a failure
never leaves a half-written plugin behind, and an existing folder is never overwritten.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import string
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from selfplay import __version__
from selfplay.api.errors import ConfigError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

SUFFIX = ".tmpl"
COMMON = "common"
PACKAGE_FOLDER = "__package__"
# Lowercase kebab-case starting with a letter, so that the import package and class name
# derived from it are valid Python identifiers.
NAME_RULE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Kind:
    """What ``selfplay new KIND`` makes: the registry its name must be free in, the words a
    user reads, and the one-line summary of the example it renders."""

    registry: str
    word: str
    summary: str


KINDS = {
    "game": Kind("games", "game", "a race to a target number for two roles."),
    "objective": Kind(
        "objectives", "objective", "REINFORCE on whole answers, with a KL to the reference."
    ),
    "reward": Kind("rewards", "reward", "winning in fewer turns scores more."),
    "sampler": Kind(
        "opponent_samplers",
        "opponent sampler",
        "the learner itself, or a scripted player in a share of the seats.",
    ),
}


class ScaffoldError(ConfigError):
    """`selfplay new` cannot create what was asked; the message names the value and the fix."""


def check_name(name: str, kind: str = "game") -> str:
    if not NAME_RULE.match(name):
        raise ScaffoldError(
            f"{KINDS[kind].word.capitalize()} name {name!r} is not lowercase kebab-case: use "
            "lowercase letters, digits and single hyphens, starting with a letter (for example "
            "'my-duel')."
        )
    return name


def _check_free(name: str, kind: str) -> None:
    """Two plugins registering one name cannot both load: refuse a taken name now."""
    from selfplay.plugins.manager import registries

    registry = getattr(registries(), KINDS[kind].registry)
    if name in registry:
        raise ScaffoldError(
            f"A {KINDS[kind].word} named {name!r} is already registered (by "
            f"{registry.entries[name].plugin}); choose another name."
        )


def template_values(name: str, kind: str = "game") -> dict[str, str]:
    """What the templates' ``${...}`` placeholders become for the plug-in ``name``."""
    words = check_name(name, kind).split("-")
    return {
        "name": name,
        "kind": KINDS[kind].word,
        "module": "_".join(words),
        "package": "selfplay_plugin_" + "_".join(words),
        "distribution": f"selfplay-plugin-{name}",
        "class_name": "".join(word.capitalize() for word in words),
        "title": " ".join(words).capitalize(),
        "summary": KINDS[kind].summary,
        "selfplay_version": __version__,
    }


def render_game_plugin(name: str, into: Path | str = ".") -> Path:
    """`render_plugin` for a game."""
    return render_plugin("game", name, into)


def render_plugin(kind: str, name: str, into: Path | str = ".") -> Path:
    """Render the ``kind`` template as ``into/selfplay-plugin-NAME``; returns that folder."""
    if kind not in KINDS:
        raise ScaffoldError(f"selfplay new {kind}: make one of {', '.join(KINDS)}.")
    values = template_values(name, kind)
    _check_free(name, kind)
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
        templates = resources.files("selfplay.templates")
        for folder in (COMMON, kind):
            for parts, source in template_files(templates / folder):
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


TRY = {  # how to run what `selfplay new KIND` made
    "game": "selfplay run --game {name}",
    "objective": "selfplay run --objective {name}",
    "reward": "selfplay run --reward outcome+{name}=0.5",
    "sampler": "selfplay run --opponent {name}",
}


def cmd_new(args: argparse.Namespace) -> int:
    from selfplay.core.run.display import docs_page

    folder = render_plugin(args.kind, args.name, args.dir)
    print(f"Created {folder}. Next:")
    # a bare name would make pip look on the package index: show a path
    print(f"  pip install {folder if folder.is_absolute() else f'./{folder}'}")
    print(f"  {TRY[args.kind].format(name=args.name)}")
    print(f"The {KINDS[args.kind].word}, its README and its tests are yours to change;")
    print(f"{docs_page('plugins.md')} guides you.")
    return 0


def add_new_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "kind",
        choices=["game", "objective", "reward", "sampler"],
        help="what to create: a game, objective, reward or (opponent) sampler plug-in",
    )
    parser.add_argument("name", help="its name, lowercase kebab-case, e.g. my-duel")
    parser.add_argument(
        "--dir", type=Path, default=Path("."), help="folder to create selfplay-plugin-NAME in"
    )
