"""The listings (`selfplay games`, `selfplay recipes`, ...) as a terminal shows them: bracketed
text kept, factory defaults shown, an 80-column terminal fitted."""

from __future__ import annotations

import io

from rich.console import Console

from selfplay.core.commands.listing import games, games_table, recipes, recipes_table


def rendered(table, width: int = 400) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(table)
    return console.file.getvalue()


def test_the_games_table_keeps_bracketed_text_and_shows_factory_defaults():
    text = rendered(games_table(games()))
    assert "answer [check], [bet], [call] or [fold]" in text  # rich markup ate "[check]"
    assert "PydanticUndefined" not in text
    assert "verifier_options = {}" in text


def test_listings_fit_an_80_column_terminal_and_break_module_names_at_their_dots():
    for table in (games_table(games()), recipes_table(recipes())):
        lines = rendered(table, width=80).splitlines()
        assert max(len(line) for line in lines) <= 80
    text = rendered(recipes_table(recipes()), width=80)
    assert "selfplay.recipes" in text and "kuhn-poker-legal" in text
    assert "selfplay.recipes.kuhn_" not in text  # the module name broke at a dot, not mid-word


def first_column(text: str) -> list[str]:
    """The first column's text of each row, its lines joined (rows are ruled apart)."""
    rows, current = [], []
    for line in text.splitlines():
        if line.startswith(("├", "└")) and current:
            rows.append("".join(current))
            current = []
        elif line.startswith("│"):
            current.append(line.split("│")[1].strip())
    return rows


def test_a_piped_listing_never_cuts_a_name_short():
    """A pipe is 80 columns wide: every name is written whole, broken at its hyphens or
    dots, so two names that differ only at their end (three proposer games' modules) do not
    read the same."""
    from selfplay.core.commands.listing import plugins, plugins_table

    names = [row["name"] for row in games()]
    text = rendered(games_table(games()), width=80)
    assert "…" not in text and first_column(text) == names
    text = rendered(recipes_table(recipes()), width=80)
    assert "…" not in text
    text = rendered(plugins_table(plugins()), width=80)
    assert "…" not in text
    for module in ("math_proposer_solver", "proposer_solver_judge", "code_proposer_solver"):
        assert f".{module}" in text
