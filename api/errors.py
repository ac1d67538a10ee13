"""Errors a user can cause and fix; the command line turns each into an exit code."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration mistake a user can fix; the message says what and how (exit code 2)."""
