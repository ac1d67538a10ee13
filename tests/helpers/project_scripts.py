"""Load one of the project's scripts (benchmarks/, scripts/) as a module by its path.

They are scripts, not a package, so a test cannot import them by name. ``tests/helpers`` is on
pytest's ``pythonpath`` (pyproject.toml): tests ``from project_scripts import load_script``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_script(relative: str, *, name: str | None = None, beside: bool = False) -> ModuleType:
    """The module of ``ROOT/relative``, registered in ``sys.modules`` under ``name`` (the
    file's stem by default: dataclasses look their module up there). ``beside`` puts the
    script's folder on ``sys.path`` first, for scripts that import their neighbours."""
    path = ROOT / relative
    if beside and str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    name = name or path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
