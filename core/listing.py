"""What `selfplay games` and `selfplay plugins` report, as plain data and as rich tables."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from selfplay.plugins.manager import load


def game_info(game_cls: Any, plugin: str) -> dict[str, Any]:
    options = {}
    for name, field in game_cls.Options.model_fields.items():
        options[name] = {"default": field.get_default(), "description": field.description or ""}
    return {
        "name": game_cls.name,
        "roles": list(game_cls.roles),
        "description": game_cls.description,
        "players": sorted(game_cls.players),
        "options": options,
        "plugin": plugin,
    }


def games() -> list[dict[str, Any]]:
    return [game_info(entry.obj, entry.plugin) for entry in load().registries.games]


def plugins() -> list[dict[str, Any]]:
    return [
        {
            "name": info.name,
            "version": info.version,
            "entry_point": info.entry_point,
            "builtin": info.builtin,
            "registered": info.registered,
            "error": info.error,
        }
        for info in load().plugins
    ]


def games_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="games", show_lines=True)
    for header in ("name", "roles", "players", "description and options"):
        table.add_column(header)
    for row in rows:
        options = "\n".join(
            f"  {name} = {opt['default']!r}: {opt['description']}"
            for name, opt in row["options"].items()
        )
        table.add_row(
            row["name"],
            ", ".join(row["roles"]),
            ", ".join(row["players"]),
            f"{row['description']}\n{options}",
        )
    return table


def plugins_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="plugins")
    for header in ("plugin", "version", "registered", "status"):
        table.add_column(header)
    for row in rows:
        registered = "; ".join(
            f"{kind}: {', '.join(names)}" for kind, names in row["registered"].items()
        )
        status = "built-in" if row["builtin"] else row["entry_point"]
        if row["error"]:
            status = f"[red]failed: {row['error']}[/red]"
        table.add_row(row["name"], row["version"], registered, status)
    return table
