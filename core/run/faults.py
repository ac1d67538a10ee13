"""What a run does when something goes wrong that must not cost it its work.

A run stopped by a faulty plug-in, a failed write, an allocation that failed or rollout
servers that failed closes its trackers and says what its folder keeps and how to go on: the
resume command, with what the stopped process was given (a resume leg's new total of
iterations, its ``--set``) and the setting the stop asks to change.
(Within an iteration: a match whose game rules raised is voided and counted,
`selfplay.core.rollout.voided`; a sample whose return or advantage is not a finite number is
dropped and counted, `selfplay.core.train.samples.nonfinite`.)
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from selfplay.api.errors import PluginFault
from selfplay.core.machine.memory import OutOfMemory, stated
from selfplay.core.plan.config_loader import parse_value
from selfplay.core.run.folder import checkpoint
from selfplay.core.serving.rollout_client import RolloutFailure

STOPS = (PluginFault, checkpoint.StorageError, OutOfMemory, RolloutFailure)


@contextlib.contextmanager
def stopping(
    trackers: Any, kept_in: Callable[[], Path | None], given: Mapping[str, Any] = {}
) -> Iterator[None]:
    """Around a run: on a plug-in fault or a failed write, close the ``trackers`` and add to
    the message what the run folder ``kept_in()`` keeps (None until the loop began) and the
    resume that goes on, with the settings a resume leg was ``given`` ({KEY: value})."""
    try:
        yield
    except Exception as raised:
        _close(trackers)
        err = stated(raised)  # an allocation that failed outside the update and the rollouts
        where = kept_in() if isinstance(err, STOPS) else None
        if err is raised and where is None:
            raise
        if where is None:
            raise err from None
        going_on = kept(Path(where), getattr(err, "resume_with", None), given=given)
        raise type(err)(f"{err} {going_on}") from None
    except KeyboardInterrupt:  # Ctrl-C: main() says "interrupted", and with this how to go on
        _close(trackers)
        where = kept_in()
        if where is None:
            raise
        raise KeyboardInterrupt(kept(Path(where), fixed=False, given=given)) from None
    except BaseException:
        _close(trackers)
        raise


def _close(logger: Any) -> None:
    if logger is not None:
        with contextlib.suppress(Exception):  # the disk may still be full; the CSV counts
            logger.finalize("failed")


def kept(
    folder: Path,
    resume_with: str | None = None,
    fixed: bool = True,
    given: Mapping[str, Any] = {},
) -> str:
    """What a stopped run's folder keeps, and how to go on (``resume_with``: a setting the
    resume must change, ``KEY=VALUE``; ``fixed``: once what stopped it is fixed; a run the user
    interrupted needs nothing fixed; ``given``: what the stopped resume leg was given)."""
    newest = checkpoint.latest(folder)
    once = "once fixed, " if fixed else ""
    command = resume_command(folder, given, resume_with)
    if newest is None:
        return f"No checkpoint was written yet: {once}`{command}` starts the run over."
    return (
        f"{folder} keeps everything up to its last checkpoint, {newest.name}: {once}continue "
        f"with `{command}`."
    )


def resume_command(
    folder: Path, given: Mapping[str, Any] = {}, resume_with: str | None = None
) -> str:
    """``selfplay run --resume FOLDER`` with the settings the stopped leg was ``given``
    ({KEY: value}: a leg that raised ``--iterations`` goes on to its own total, not the
    first leg's) and the one the stop asks to change (``KEY=VALUE``, over the same key)."""
    settings = {key: _written(value) for key, value in given.items()}
    if resume_with:
        key, _, value = resume_with.partition("=")
        settings[key] = value
    words = ["selfplay", "run", "--resume", str(folder)]
    for key, text in settings.items():
        words += ["--iterations", text] if key == "iterations" else ["--set", f"{key}={text}"]
    return shlex.join(words)


def _written(value: Any) -> str:
    """A setting's value as ``--set`` reads it back (core/plan/config_loader.py)."""
    if isinstance(value, str) and parse_value(value) == value:
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # minutes=30, as it was given
    return json.dumps(value)
