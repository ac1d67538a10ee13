"""A registered class that is imported on first use.

Built-ins whose modules import torch register through `lazy("module:Class")`, so listing
plugins or printing ``--version`` never imports torch. The object stands for the class: it
is called like it, and ``Options``, ``positional`` and the docstring are read from it (which
imports the module then).
"""

from __future__ import annotations

import importlib
from typing import Any


class Lazy:
    def __init__(self, target: str) -> None:
        self.target = target
        self._cls: Any = None

    def load(self) -> Any:
        if self._cls is None:
            module, _, name = self.target.partition(":")
            self._cls = getattr(importlib.import_module(module), name)
        return self._cls

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("target", "_cls"):
            raise AttributeError(name)
        return getattr(self.load(), name)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.load().__doc__

    def __repr__(self) -> str:
        return f"lazy({self.target})"


def lazy(target: str) -> Lazy:
    """``lazy("selfplay.core.algorithms.rae:RAE")``: the class, imported when first used."""
    return Lazy(target)
