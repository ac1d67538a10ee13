"""Registers the built-in estimators through the plugin hook, like any third-party plugin.

The factories import their module on first use, so listing plugins does not import torch.
"""

from __future__ import annotations

from typing import Any

from selfplay.plugins.hookspecs import hookimpl


def rae(**options: Any) -> Any:
    from selfplay.core.algorithms.rae import RAE

    return RAE(**options)


def grpo(**options: Any) -> Any:
    from selfplay.core.algorithms.grpo import GRPO

    return GRPO(**options)


def reinforce_pp(**options: Any) -> Any:
    from selfplay.core.algorithms.reinforce_pp import ReinforcePP

    return ReinforcePP(**options)


def lsp(**options: Any) -> Any:
    from selfplay.core.algorithms.lsp import LSP

    return LSP(**options)


def plain(**options: Any) -> Any:
    from selfplay.core.algorithms.reinforce_pp import Plain

    return Plain(**options)


@hookimpl
def register_estimators(register):
    register("rae", rae)
    register("grpo", grpo)
    register("reinforce++", reinforce_pp)
    register("lsp", lsp)
    register("none", plain)
