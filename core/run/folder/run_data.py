"""A run folder's metrics read back: metrics.csv as columns of floats, with the last cross-play
table and the closing table (summary.json), for the report's figures (core/run/plots.py).
"""

from __future__ import annotations

import csv
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError


@dataclass
class RunData:
    """One run folder's metrics, as columns of floats (missing cells are NaN)."""

    path: Path
    label: str
    columns: dict[str, list[float]] = field(default_factory=dict)
    crossplay: list[dict[str, str]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)  # summary.json: the closing table

    def series(self, key: str) -> tuple[list[float], list[float]]:
        """(iterations, values) of ``key`` where it has a value."""
        pairs = [
            (x, y)
            for x, y in zip(
                self.columns.get("iteration", []), self.columns.get(key, []), strict=False
            )
            if not math.isnan(y)
        ]
        return [x for x, _ in pairs], [y for _, y in pairs]

    def keys(self, prefix: str, suffix: str = "") -> list[str]:
        return sorted(k for k in self.columns if k.startswith(prefix) and k.endswith(suffix))


def read_run(path: Path, label: str | None = None) -> RunData:
    path = Path(path)
    metrics = path / "metrics.csv"
    if not metrics.is_file():
        raise ConfigError(
            f"{path} has no metrics.csv: pass a run folder that trained at least one iteration."
        )
    with metrics.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    names = list(rows[0]) if rows else []
    columns = {name: [number(row.get(name)) for row in rows] for name in names}
    crossplay = []
    if (path / "crossplay.csv").is_file():
        with (path / "crossplay.csv").open(newline="", encoding="utf-8") as handle:
            crossplay = list(csv.DictReader(handle))
    summary: dict[str, Any] = {}
    try:
        summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as err:  # drawn without the closing table's figure
        print(f"warning: {path / 'summary.json'} does not read ({err}); left out.", file=sys.stderr)
    return RunData(path, label or path.name, columns, crossplay, summary)


def number(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan
