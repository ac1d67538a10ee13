"""A plugin whose import fails, to test how selfplay reports it."""

import selfplay_dependency_that_does_not_exist  # noqa: F401
