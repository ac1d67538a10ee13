"""A learner is built in two steps, each whole (core/train/learners.py): its parts from its plan,
then those parts set up to train."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from selfplay.core.config import RunConfig
from selfplay.core.train.learners import Learner, LearnerParts


def test_a_learner_is_built_whole_with_no_field_left_to_fill():
    """What trains a learner is required when it is made, typed, and never filled in later."""
    training = {"model", "optimizer", "reference", "updater"}
    assert not training & {f.name for f in dataclasses.fields(LearnerParts)}
    hints = typing.get_type_hints(Learner)
    for field in dataclasses.fields(Learner):
        assert hints[field.name] is not typing.Any, field.name
        if field.name in training:
            assert field.default is dataclasses.MISSING, field.name
            assert field.default_factory is dataclasses.MISSING, field.name
    with pytest.raises(TypeError, match="model"):
        Learner("learner", (), RunConfig(), None, None, None, None)  # type: ignore[arg-type]
