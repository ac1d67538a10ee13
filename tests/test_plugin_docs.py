"""docs/plugins.md stays true: every hook documented, the example is the rendered template."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from selfplay.core.commands.scaffold import render_game_plugin
from selfplay.plugins import hookspecs

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "plugins.md"


def hook_specs() -> dict[str, str]:
    return {
        name: inspect.getdoc(func) or ""
        for name, func in vars(hookspecs).items()
        if callable(func) and hasattr(func, "selfplay_spec")
    }


def test_every_hookspec_is_in_the_reference_with_its_docstring():
    guide = GUIDE.read_text()
    specs = hook_specs()
    assert len(specs) >= 8
    for name, doc in specs.items():
        assert f"### `{name}(register)`" in guide, f"docs/plugins.md lacks the hook {name}"
        assert doc and doc in guide, (
            f"docs/plugins.md must quote the docstring of {name} from plugins/hookspecs.py "
            "word for word in its hook reference; copy it over."
        )


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "selfplay_plugin_my_duel/__init__.py",
        "selfplay_plugin_my_duel/game.py",
        "tests/test_game.py",
    ],
)
def test_the_guide_shows_the_rendered_template(path, tmp_path):
    rendered = render_game_plugin("my-duel", tmp_path) / path
    assert rendered.read_text() in GUIDE.read_text(), (
        f"docs/plugins.md must show {path} exactly as `selfplay new game my-duel` renders it"
    )


def test_readme_links_the_guide():
    assert "(docs/plugins.md)" in (ROOT / "README.md").read_text()
