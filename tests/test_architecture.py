"""The floors hold: contracts import nothing above them, plug-ins never import core, and
core never imports a plug-in. docs/architecture.md draws the same picture.

api/        imports nothing of selfplay but api/
plugins/    knows api/ and itself
games/, rewards/, verifiers/, opponents/, monitors/, recipes/, suites/
            never import core/; games/ never imports opponents/ (shared rules such as the
            band live in api/)
core/       builds plug-ins by name from the registries; inside it, floors lowest first:
            config/ (the schema), machine/ (Fabric, processes, memory) and the top (rollout,
            reward pipeline, stats, evaluation) < algorithms/, models/ < serving/, league/ <
            train/ (the iteration) < plan/ (the run planned from its config) < run/ (the
            run) < commands/

A module holds at most 380 lines and a folder at most 14 modules, short of the limits of 400
and 15 that they once reached: one that grows is split by what varies before it gets there.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = (
    "api", "core", "plugins", "games", "rewards", "verifiers", "opponents", "monitors", "recipes",
    "suites", "testing",
)  # fmt: skip
PLUG_INS = ("games", "rewards", "verifiers", "opponents", "monitors", "recipes", "suites")
# core's rooms, lowest first: a room imports only rooms below it (and itself)
CORE_FLOORS = {
    "config": 0, "top": 0, "machine": 0, "algorithms": 1, "models": 1, "serving": 2, "league": 2,
    "train": 3, "plan": 4, "run": 5, "commands": 6,
}  # fmt: skip
# what the top of core/ holds: what rooms on several floors use (the rollout engine, the reward
# pipeline, episode statistics, evaluation against scripted players), nothing that overflowed
CORE_TOP = {"rollout", "evaluate", "stats", "reward_pipeline"}


MAX_LINES, MAX_MODULES = 380, 14
# Above those, and why they wait (each may shrink, never grow): none now. Kuhn poker and the
# ratings became packages (games/kuhn_poker/, api/ratings/) whose __init__ keeps the paths
# plug-ins import.
OVER_LINES: dict[str, int] = {}
OVER_MODULES: dict[str, int] = {}


def modules() -> list[Path]:
    tops = list(ROOT.glob("*.py"))  # the package's own __init__.py
    return sorted(tops + [p for top in SHIPPED for p in (ROOT / top).rglob("*.py")])


def imported(path: Path) -> set[str]:
    """Every selfplay module ``path`` imports, at any depth of the file (lazy imports too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n == "selfplay" or n.startswith("selfplay.")}


def floor(path: Path) -> str:
    return path.relative_to(ROOT).parts[0]


def test_the_contracts_import_nothing_above_them():
    for path in (ROOT / "api").rglob("*.py"):
        above = {n for n in imported(path) if not n.startswith("selfplay.api")}
        assert not above, f"{path.name} imports {above}; api/ may import only api/"


def test_the_game_check_knows_only_the_contracts():
    """selfplay.testing is what a plug-in's tests import: the contracts and the registries (a
    game named by its registered name), never the trainer nor another plug-in."""
    allowed = ("selfplay.api", "selfplay.plugins", "selfplay.testing")
    for path in (ROOT / "testing").rglob("*.py"):
        above = {n for n in imported(path) if not n.startswith(allowed)}
        assert not above, f"testing/{path.name} imports {above}; it may import api/ and plugins/"


def test_the_plugin_machinery_knows_only_the_contracts():
    for path in (ROOT / "plugins").glob("*.py"):
        above = {
            n for n in imported(path) if not n.startswith(("selfplay.api", "selfplay.plugins"))
        }
        assert not above, f"plugins/{path.name} imports {above}"


def test_plug_ins_never_import_core_and_games_never_import_opponents():
    for path in modules():
        if floor(path) not in PLUG_INS:
            continue
        names = imported(path)
        core = {n for n in names if n.startswith("selfplay.core")}
        assert not core, f"{path.relative_to(ROOT)} imports {core}"
        if floor(path) == "games":
            rivals = {n for n in names if n.startswith("selfplay.opponents")}
            assert not rivals, f"{path.relative_to(ROOT)} imports {rivals}"


def test_core_never_imports_a_plug_in():
    """core/ builds games, rewards, verifiers, samplers and recipes from the registries by
    name; it knows their capabilities from api/."""
    plug_ins = tuple(f"selfplay.{name}" for name in PLUG_INS)
    for path in (ROOT / "core").rglob("*.py"):
        found = {n for n in imported(path) if n.startswith(plug_ins)}
        assert not found, f"{path.relative_to(ROOT)} imports the plug-ins {found}"


def room(path: Path) -> str:
    """The room of core/ a module is in: a folder's name, or "top"."""
    parts = path.relative_to(ROOT / "core").parts
    return parts[0] if len(parts) > 1 else "top"


def test_core_rooms_import_only_rooms_below_them():
    for path in (ROOT / "core").rglob("*.py"):
        mine = CORE_FLOORS[room(path)]
        for name in imported(path):
            if not name.startswith("selfplay.core."):
                continue
            parts = name.split(".")[2:]
            other = parts[0] if (ROOT / "core" / parts[0]).is_dir() else "top"
            assert CORE_FLOORS[other] <= mine, (
                f"{path.relative_to(ROOT)} ({room(path)}) imports {name} ({other}), a room above it"
            )


def test_the_top_of_core_holds_only_what_both_rooms_use():
    top = {p.stem for p in (ROOT / "core").glob("*.py") if p.name != "__init__.py"}
    assert top == CORE_TOP, f"core/ holds {sorted(top - CORE_TOP)} beyond {sorted(CORE_TOP)}"
    rooms = {p.name for p in (ROOT / "core").iterdir() if (p / "__init__.py").exists()}
    assert rooms == set(CORE_FLOORS) - {"top"}


def test_modules_are_small_without_formatter_escapes_and_folders_hold_at_most_fourteen():
    for path in modules():
        text = path.read_text()
        lines, name = len(text.splitlines()), str(path.relative_to(ROOT))
        most = OVER_LINES.get(name, MAX_LINES)
        assert lines <= most, f"{name} has {lines} lines (at most {most}): split it by concept"
        escapes = [m for m in ("fmt: skip", "fmt: off") if m in text]
        assert not escapes, f"{name} escapes the formatter ({escapes[0]})"
    folders = {path.parent for path in modules()}
    for folder in folders:
        count = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
        name = str(folder.relative_to(ROOT))
        most = OVER_MODULES.get(name, MAX_MODULES)
        assert count <= most, (
            f"{name} holds {count} modules (at most {most}): split it by what varies into a "
            "named sub-room (as core/run/duties/), rather than merging modules"
        )


def test_no_function_has_more_than_twelve_paths():
    """McCabe complexity at most 12 (pyproject.toml), the shipped code and the tests alike."""
    found = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "C901", "--output-format",
         "concise", "--no-cache", str(ROOT)],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    assert "max-complexity = 12" in (ROOT / "pyproject.toml").read_text()
    assert found.returncode == 0, f"split these by what varies:\n{found.stdout}{found.stderr}"


def test_importing_selfplay_does_not_import_torch():
    code = "import sys, selfplay; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- docs/architecture.md draws the same house ------------------------------------------------

DESIGN = ROOT / "docs" / "architecture.md"


def named_folders(text: str) -> set[str]:
    """Every ``name/`` the page names as a folder (``core/run/``, ``games/banks/``)."""
    import re

    return {m.rstrip("/") for m in re.findall(r"(?<![\w./-])((?:[a-z_]+/)+)(?![\w.])", text)}


def folder_exists(name: str) -> bool:
    """``core/run`` from the root, or ``run`` (``duties``) as a folder one or two levels down
    (the layout's indented rooms)."""
    if (ROOT / name).is_dir():
        return True
    found = [*ROOT.glob(f"*/{name}"), *ROOT.glob(f"*/*/{name}")]
    return any(p.is_dir() for p in found if ".venv" not in p.parts)


def test_every_folder_the_design_names_exists():
    missing = sorted(f for f in named_folders(DESIGN.read_text()) if not folder_exists(f))
    assert not missing, f"docs/architecture.md names folders that do not exist: {missing}"


def test_every_package_folder_is_in_the_design():
    text = DESIGN.read_text()
    named = named_folders(text) | {f.split("/")[-1] for f in named_folders(text)}
    packages = sorted(
        str(p.parent.relative_to(ROOT))
        for p in ROOT.rglob("__init__.py")
        if p.parent != ROOT
        and not p.relative_to(ROOT).parts[0].startswith((".", "tests"))
        and "egg-info" not in str(p)
    )
    unnamed = [p for p in packages if p not in named and p.split("/")[-1] not in named]
    assert not unnamed, f"docs/architecture.md does not name the package folders {unnamed}"


def test_every_package_folder_ships_in_a_wheel():
    """pyproject.toml lists packages by name: a folder left out is missing from a wheel
    install (three sub-rooms were), though an editable checkout never shows it."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    folders = {
        ".".join(("selfplay", *p.parent.relative_to(ROOT).parts))
        for p in ROOT.rglob("__init__.py")
        if not p.relative_to(ROOT).parts[0].startswith((".", "tests", "benchmarks"))
        and "egg-info" not in str(p)
    }
    assert folders - listed == set(), "add these to pyproject.toml's packages"


def module_exists(name: str) -> bool:
    """``core/run/trainer.py`` from the root, or ``duties/records.py`` inside a named room."""
    return (ROOT / name).is_file() or any(ROOT.glob(f"*/*/{name}"))


def test_every_module_the_design_names_exists():
    import re

    paths = set(re.findall(r"\b((?:[a-z_]+/)+[a-z_]+\.py)\b", DESIGN.read_text()))
    missing = sorted(p for p in paths if not module_exists(p))
    assert paths and not missing, f"docs/architecture.md names modules that do not exist: {missing}"
