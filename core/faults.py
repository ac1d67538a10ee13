"""What a run does when something goes wrong that must not cost it its work.

- A match whose game rules raised is voided by the rollout engine (`VoidMatch`): counted in
  ``matches/errors``, reported, kept in episodes.jsonl; when most matches of an iteration
  fail, the game is broken and the run stops.
- A sample whose return or advantage is not a finite number is dropped before it can reach
  the estimator's state (``samples/nonfinite_dropped``).
- A run stopped by a faulty plug-in or a failed write says what its folder keeps.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from rich.markup import escape  # the console reads [brackets] as styles

from selfplay.api.errors import PluginFault
from selfplay.api.estimator import Sample
from selfplay.core.rollout import VoidMatch
from selfplay.core.train import checkpoint

Reduce = Callable[[torch.Tensor], torch.Tensor]
Say = Callable[[str], None]


def voided(
    iteration: int, void: Sequence[VoidMatch], played: int, reduce: Reduce, say: Say
) -> dict[str, float]:
    """``matches/errors`` of the iteration (all processes); stops when most matches failed."""
    counted = reduce(torch.tensor([len(void), played], dtype=torch.float64)).tolist()
    failed, total = int(counted[0]), int(counted[0] + counted[1])
    first = f"first: the {void[0].sentence()}" if void else "on another process"
    if failed * 2 > total:
        raise PluginFault(
            f"Iteration {iteration}: {failed} of {total} matches were voided because the "
            f"game's own code raised ({first}); the game plug-in needs a fix."
        )
    if failed:
        say(
            f"warning: iteration {iteration}: {failed} of {total} matches voided "
            f"({escape(first)}); episodes.jsonl keeps them as void records, metrics.csv "
            "counts matches/errors."
        )
    return {"matches/errors": failed}


def nonfinite(
    iteration: int, dropped: Sequence[Sample], advantages: int, reduce: Reduce, say: Say
) -> dict[str, float]:
    """``samples/nonfinite_dropped`` of the iteration (all processes), with a warning."""
    terms = sorted({k for s in dropped for k, v in s.parts.items() if not math.isfinite(v)})
    count = int(reduce(torch.tensor([len(dropped) + advantages], dtype=torch.float64)).item())
    if count:
        where = f" (reward terms: {', '.join(terms)})" if terms else ""
        say(
            f"warning: iteration {iteration}: dropped {count} samples whose return or "
            f"advantage is not a finite number{where}; see samples/nonfinite_dropped."
        )
    return {"samples/nonfinite_dropped": count}


def gather(fabric: Any, items: list[Any]) -> list[Any]:
    """Every process's ``items`` (picklable), in rank order; every process calls this."""
    if fabric.world_size == 1:
        return items
    gathered: list[Any] = [None] * fabric.world_size
    torch.distributed.all_gather_object(gathered, items)
    return [item for part in gathered for item in part]


@contextlib.contextmanager
def stopping(trainer: Any) -> Iterator[None]:
    """Around a run: on a plug-in fault or a failed write, close the trackers and add
    to the message what the run folder keeps (once the loop had begun)."""
    try:
        yield
    except (PluginFault, checkpoint.StorageError) as err:
        _close(getattr(trainer, "trackers", None))
        if not getattr(trainer, "looping", False):
            raise
        config = trainer.config
        where = getattr(trainer, "shared_path", None) or config.resume or config.out
        raise type(err)(f"{err} {kept(Path(where))}") from None
    except BaseException:
        _close(getattr(trainer, "trackers", None))
        raise


def _close(logger: Any) -> None:
    if logger is not None:
        with contextlib.suppress(Exception):  # the disk may still be full; the CSV counts
            logger.finalize("failed")


def kept(folder: Path) -> str:
    """What a stopped run's folder keeps, and how to go on."""
    newest = checkpoint.latest(folder)
    if newest is None:
        return (
            f"No checkpoint was written yet: once fixed, `selfplay run --resume {folder}` "
            "starts the run over."
        )
    return (
        f"{folder} keeps everything up to its last checkpoint, {newest.name}: once fixed, "
        f"continue with `selfplay run --resume {folder}`."
    )
