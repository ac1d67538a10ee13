"""What `selfplay games` and `selfplay plugins` report, as plain data and as rich tables."""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape
from rich.table import Table

from selfplay.plugins.manager import load


def game_info(game_cls: Any, plugin: str) -> dict[str, Any]:
    options = {}
    for name, field in game_cls.Options.model_fields.items():
        required = field.is_required()
        options[name] = {
            "default": None if required else field.get_default(call_default_factory=True),
            "required": required,
            "description": field.description or "",
        }
    return {
        "name": game_cls.name,
        "roles": list(game_cls.roles),
        "description": game_cls.description,
        "players": sorted(game_cls.players),
        "options": options,
        "plugin": plugin,
    }


def games() -> list[dict[str, Any]]:
    registry = load().registries.games
    rows = []
    for entry in registry:
        row = {**game_info(entry.obj, entry.plugin), "family": None}
        if entry.name in registry.clashes:
            row["clash"] = registry.clash_message(entry.name)
        rows.append(row)
    return rows


def family_rows() -> list[dict[str, Any]]:
    """A row per game of each game family (``openspiel:kuhn_poker``, ``textarena:...``), for
    `selfplay games --json`: its name, family and plug-in; roles, players and options are
    null, as they are read only when the game is loaded. A family whose extra is not
    installed has none (the text listing says how to install it)."""
    from selfplay.plugins.registry import PluginError

    rows = []
    for entry in load().registries.game_families:
        try:
            members = sorted(entry.obj.members())
        except PluginError:
            continue
        blank = dict.fromkeys(("roles", "description", "players", "options"))
        rows += [
            {
                "name": f"{entry.name}:{member}",
                "family": entry.name,
                **blank,
                "plugin": entry.plugin,
            }
            for member in members
        ]
    return rows


def family_members(prefix: str) -> list[str]:
    """Every game name of a game family, written as ``--game`` takes it (``prefix:member``)."""
    family = load().registries.game_families.get(prefix)
    return [f"{prefix}:{member}" for member in sorted(family.members())]


def family_notes() -> list[str]:
    """A line per game family that says what it offers (or which extra it needs), for the
    families that describe themselves (``summary()``)."""
    notes = []
    for entry in load().registries.game_families:
        summary = getattr(entry.obj, "summary", None)
        if callable(summary):
            notes.append(summary())
    return notes


def plugins() -> list[dict[str, Any]]:
    return [
        {
            "name": info.name,
            "version": info.version,
            "entry_point": info.entry_point,
            "builtin": info.builtin,
            "registered": info.registered,
            "error": info.error,
            "warnings": info.warnings,
        }
        for info in load().plugins
    ]


# The plug-in kinds listed with their options, and the title of each table.
OPTION_KINDS = {
    "rewards": "rewards (combine: --reward 'outcome=1+format=0.1')",
    "verifiers": "verifiers (verdicts: pass / fail / timeout / error)",
    "opponent_samplers": "opponent samplers (--opponent NAME or NAME:ARG)",
    "estimators": "advantage estimators (--estimator NAME, options in estimator_options)",
    "objectives": "objectives: what the update minimises (--objective NAME)",
    "callbacks": "callbacks (--set callbacks=[NAME], options in callback_options.NAME)",
}


def registered(kind: str) -> list[dict[str, Any]]:
    """Every registered plug-in of ``kind``: its one-line doc, options and plugin (and, for
    objectives, the update settings each reads)."""
    registry = getattr(load().registries, kind)
    rows = [registered_info(entry) for entry in registry]
    if kind == "objectives":
        for row, entry in zip(rows, registry, strict=True):
            row["reads"] = _objective_reads(entry.obj)
    for row in rows:
        if row["name"] in registry.clashes:
            row["plugin"] += " (clash: " + ", ".join(registry.clashes[row["name"]][1:]) + ")"
    return rows


def rewards() -> list[dict[str, Any]]:
    return registered("rewards")


def verifiers() -> list[dict[str, Any]]:
    return registered("verifiers")


def registered_info(entry: Any) -> dict[str, Any]:
    """Name, one-line doc, options and plugin of a registered factory with an ``Options`` model."""
    options_model = getattr(entry.obj, "Options", None)
    fields = options_model.model_fields if options_model is not None else {}
    options = {
        name: {
            "default": None
            if field.is_required()
            else field.get_default(call_default_factory=True),
            "required": field.is_required(),
            "description": field.description or "",
        }
        for name, field in fields.items()
    }
    doc = (entry.obj.__doc__ or "").strip().splitlines()
    description = doc[0] if doc else ""
    info = {
        "name": entry.name,
        "description": description,
        "options": options,
        "plugin": entry.plugin,
    }
    positional = getattr(entry.obj, "positional", None)
    if positional:
        info["argument"] = positional  # NAME:ARG sets this option
    return info


def _objective_reads(factory: Any) -> str:
    """``train.update_epochs, ... and the estimator`` for an objective with default options."""
    from selfplay.core.plan.build import describe_reads

    try:
        return describe_reads(factory())
    except Exception as err:  # a plug-in whose defaults do not build: say so, list the rest
        return f"(its defaults do not build: {type(err).__name__})"


def recipes() -> list[dict[str, Any]]:
    """Every registered recipe: its description, the recipe it starts from, every setting."""
    registry = load().registries.recipes
    rows = []
    for entry in registry:
        recipe = entry.obj
        try:
            settings = recipe.resolved(registry.get)
        except Exception as err:  # a base that is missing or clashes: shown, not raised
            settings = {"(error)": str(err)}
        rows.append(
            {
                "name": recipe.name,
                "description": recipe.description,
                "base": recipe.base,
                "settings": settings,
                "plugin": entry.plugin,
            }
        )
    return rows


def recipes_table(rows: list[dict[str, Any]]) -> Table:
    table = _three_columns(
        "recipes (--recipe NAME; the user's own settings win)", "description and settings"
    )
    for row in rows:
        base = f"  (starts from {row['base']})\n" if row["base"] else ""
        settings = "\n".join(f"  {key} = {value!r}" for key, value in row["settings"].items())
        text = f"{row['description']}\n{base}{settings}"
        name = escape(_dotted(row["name"], NAME_WIDTH))
        table.add_row(name, escape(text), escape(_dotted(row["plugin"])))
    return table


def options_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """Registered factories with their one-line doc and options, one row each."""
    table = _three_columns(title, "description and options")
    for row in rows:
        name = row["name"] + (f":{row['argument'].upper()}" if row.get("argument") else "")
        text = f"{row['description']}\n{option_lines(row['options'])}".strip()
        if row.get("reads"):
            text += f"\n  reads {row['reads']}"
        row_name = escape(_dotted(name, NAME_WIDTH))
        table.add_row(row_name, escape(text), escape(_dotted(row["plugin"])))
    return table


PLUGIN_WIDTH = 22
NAME_WIDTH = 22  # a name's column, its padding left out


def _three_columns(title: str, middle: str) -> Table:
    """Name, the text, and the plug-in that registered it: the text takes the width a narrow
    terminal has, the plug-in's module folds onto a second line."""
    table = Table(title=title, show_lines=True)
    table.add_column("name", max_width=NAME_WIDTH + 2, overflow="fold")
    table.add_column(middle, ratio=1, overflow="fold")
    table.add_column("plugin", max_width=PLUGIN_WIDTH, overflow="fold")
    return table


def _dotted(name: str, width: int = PLUGIN_WIDTH) -> str:
    """A name in lines of at most ``width``, broken before a dot (a module's) or after a
    hyphen or colon (a game's), never cut short: a table piped to a file would otherwise end
    long names in "…", and two names that differ only past the cut would read the same (a
    piece longer than ``width`` is folded by its column)."""
    lines = [""]
    for piece in re.findall(r"\.?[^.:-]+[:-]*|[.:-]+", name):
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append(piece)
        else:
            lines[-1] += piece
    return "\n".join(lines)


def option_lines(options: dict[str, dict[str, Any]]) -> str:
    """``  name = default: description``, one line per option; required ones say so."""
    return "\n".join(
        f"  {name} = {'(required)' if opt.get('required') else repr(opt['default'])}: "
        f"{opt['description']}"
        for name, opt in options.items()
    )


def games_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="games", show_lines=True)
    table.add_column("name", max_width=NAME_WIDTH, overflow="fold")
    table.add_column("roles", max_width=14, overflow="fold")
    table.add_column("players", max_width=14, overflow="fold")
    table.add_column("description and options", ratio=1, overflow="fold")
    for row in rows:
        text = escape(f"{row['description']}\n{option_lines(row['options'])}")
        table.add_row(
            escape(_dotted(row["name"], NAME_WIDTH - 2)),
            escape(", ".join(row["roles"])),
            escape(", ".join(row["players"])),
            text + (f"\n[yellow]{escape(row['clash'])}[/yellow]" if row.get("clash") else ""),
        )
    return table


def plugins_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="plugins")
    for header in ("plugin", "version", "registered", "status"):
        table.add_column(header, overflow="fold")
    for row in rows:
        registered = "; ".join(
            f"{kind}: {', '.join(names)}" for kind, names in row["registered"].items()
        )
        status = "built-in" if row["builtin"] else row["entry_point"]
        if row["error"]:
            status = f"[red]failed: {escape(row['error'])}[/red]"
        for warning in row.get("warnings", []):
            status += f"\n[yellow]{escape(warning)}[/yellow]"
        name = escape(_dotted(row["name"], width=26))
        table.add_row(name, escape(str(row["version"])), escape(registered), status)
    return table
