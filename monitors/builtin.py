"""Registers the built-in callbacks: the training monitors (see each module's doc).

The monitors' modules (torch, pydantic) are imported when a run asks for them.
"""

from __future__ import annotations

from typing import Any

from selfplay.plugins.hookspecs import hookimpl


def diversity(**options: Any) -> Any:
    """Distinct-1/2 and duplicate rate of the learner's texts per role and iteration."""
    from selfplay.monitors.diversity import DiversityMonitor

    return DiversityMonitor(**options)


def hacking_monitor(**options: Any) -> Any:
    """Warns (optionally rolls back) when reward rises while a held-out metric falls."""
    from selfplay.monitors.hacking_monitor import HackingMonitor

    return HackingMonitor(**options)


@hookimpl
def register_callbacks(register):
    register("diversity", diversity)
    register("hacking-monitor", hacking_monitor)
