"""Errors a user can cause and fix; the command line turns each into an exit code."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class ConfigError(ValueError):
    """A configuration mistake a user can fix; the message says what and how (exit code 2)."""


class PluginFault(RuntimeError):
    """A plug-in's own code raised while a run used it (exit code 2).

    The message names the plug-in, what it was doing and the error with the line that raised
    it, so its author can fix it; the run stops on its last checkpoint, nothing else is lost.
    """


def describe(err: BaseException) -> str:
    """``ValueError: boom (rules.py:42 in step)``: the error and the line that raised it."""
    frames = traceback.extract_tb(err.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" ({Path(last.filename).name}:{last.lineno} in {last.name})"
    text = str(err) or "(no message)"
    return f"{type(err).__name__}: {text}{where}"


@contextmanager
def blame(what: str) -> Iterator[None]:
    """Turn an error raised inside plug-in code into a PluginFault that names ``what``
    (``"Reward 'judge' while scoring 8 matches"``); the plug-in's own ConfigErrors and
    PluginFaults pass through as they are."""
    try:
        yield
    except (ConfigError, PluginFault):
        raise
    except Exception as err:
        raise PluginFault(f"{what} raised {describe(err)}.") from err
