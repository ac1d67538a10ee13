"""What a run does when something goes wrong that must not cost it its work.

A run stopped by a faulty plug-in, a failed write, an allocation that failed or rollout
servers that failed closes its trackers and says what its folder keeps and how to go on.
(Within an iteration: a match whose game rules raised is voided and counted,
`selfplay.core.rollout.voided`; a sample whose return or advantage is not a finite number is
dropped and counted, `selfplay.core.train.samples.nonfinite`.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from selfplay.api.errors import PluginFault
from selfplay.core.memory import OutOfMemory
from selfplay.core.run import checkpoint
from selfplay.core.serving.rollout_client import RolloutFailure


@contextlib.contextmanager
def stopping(trackers: Any, kept_in: Callable[[], Path | None]) -> Iterator[None]:
    """Around a run: on a plug-in fault or a failed write, close the ``trackers`` and add to
    the message what the run folder ``kept_in()`` keeps (None until the loop began)."""
    try:
        yield
    except (PluginFault, checkpoint.StorageError, OutOfMemory, RolloutFailure) as err:
        _close(trackers)
        where = kept_in()
        if where is None:
            raise
        raise type(err)(f"{err} {kept(Path(where), getattr(err, 'resume_with', None))}") from None
    except KeyboardInterrupt:  # Ctrl-C: main() says "interrupted", and with this how to go on
        _close(trackers)
        where = kept_in()
        if where is None:
            raise
        raise KeyboardInterrupt(kept(Path(where), fixed=False)) from None
    except BaseException:
        _close(trackers)
        raise


def _close(logger: Any) -> None:
    if logger is not None:
        with contextlib.suppress(Exception):  # the disk may still be full; the CSV counts
            logger.finalize("failed")


def kept(folder: Path, resume_with: str | None = None, fixed: bool = True) -> str:
    """What a stopped run's folder keeps, and how to go on (``resume_with``: a setting the
    resume must change, ``KEY=VALUE``; ``fixed``: once what stopped it is fixed; a run the user
    interrupted needs nothing fixed)."""
    newest = checkpoint.latest(folder)
    once = "once fixed, " if fixed else ""
    change = f" --set {resume_with}" if resume_with else ""
    if newest is None:
        return (
            f"No checkpoint was written yet: {once}`selfplay run --resume {folder}{change}` "
            "starts the run over."
        )
    return (
        f"{folder} keeps everything up to its last checkpoint, {newest.name}: {once}continue "
        f"with `selfplay run --resume {folder}{change}`."
    )
