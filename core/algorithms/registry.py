"""Registers the built-in estimators and objectives through the plugin hooks, like any plugin.

They are imported on first use (`lazy`), so listing plugins does not import torch. A new
estimator or objective is one file in this folder and one line here.
"""

from __future__ import annotations

from selfplay.plugins.hookspecs import hookimpl
from selfplay.plugins.lazy import lazy

HERE = "selfplay.core.algorithms"


@hookimpl
def register_estimators(register):
    register("rae", lazy(f"{HERE}.rae:RAE"))
    register("grpo", lazy(f"{HERE}.grpo:GRPO"))
    register("reinforce++", lazy(f"{HERE}.reinforce_pp:ReinforcePP"))
    register("lsp", lazy(f"{HERE}.lsp:LSP"))
    register("none", lazy(f"{HERE}.reinforce_pp:Plain"))


@hookimpl
def register_objectives(register):
    register("pg", lazy(f"{HERE}.pg:PolicyGradient"))
    register("legal-pg", lazy(f"{HERE}.legal_pg:LegalPolicyGradient"))
    register("dpo", lazy(f"{HERE}.dpo:DPO"))
    register("sft", lazy(f"{HERE}.sft:SFT"))
