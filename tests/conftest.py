"""Tests never load whatever third-party plugins happen to be installed."""

from __future__ import annotations

import os

import pytest

os.environ["SELFPLAY_LOAD_PLUGINS"] = ""


@pytest.fixture(autouse=True)
def fresh_plugins(monkeypatch):
    from selfplay.plugins import manager

    monkeypatch.setenv("SELFPLAY_LOAD_PLUGINS", "")
    manager.reset()
    yield
    manager.reset()
