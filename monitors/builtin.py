"""Registers the built-in callbacks (the training monitors; see each module's doc).

The monitors' modules (torch, pydantic) are imported when a run or a listing asks for them.
"""

from __future__ import annotations

from selfplay.plugins.hookspecs import hookimpl
from selfplay.plugins.lazy import lazy


@hookimpl
def register_callbacks(register):
    register("diversity", lazy("selfplay.monitors.diversity:DiversityMonitor"))
    register("hacking-monitor", lazy("selfplay.monitors.hacking_monitor:HackingMonitor"))
    register("task-schedule", lazy("selfplay.monitors.task_schedule:TaskScheduleCallback"))
    register("trajectory-filter", lazy("selfplay.monitors.trajectory_filter:TrajectoryFilter"))
