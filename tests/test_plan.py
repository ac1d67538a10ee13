"""A run is planned once: each learner's objective is built once before iteration 1, and the
trainer, the banner and the learners' assembly read the plan (core/plan/plan.py)."""

from __future__ import annotations

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.objective import Objective
from selfplay.core.plan.config_loader import build_config, learner_flags
from selfplay.core.plan.plan import plan
from selfplay.core.run import trainer
from selfplay.core.train.rollouts import Rollouts


class _Started(Exception):
    """Raised where iteration 1 would begin."""


def constructions(monkeypatch, config) -> list[type]:
    """The objectives constructed by `selfplay run` on ``config`` before iteration 1."""
    built: list[type] = []
    init = Objective.__init__

    def counted(self, *args, **kwargs):
        built.append(type(self))
        init(self, *args, **kwargs)

    def started(self, version):
        raise _Started

    monkeypatch.setattr(Objective, "__init__", counted)
    monkeypatch.setattr(Rollouts, "start", started)
    with pytest.raises(_Started):
        trainer.train(config)
    return built


def config_of(tmp_path, overrides=(), **flags):
    flags = {"out": str(tmp_path), "name": "run", "iterations": 1, **flags}
    return build_config(None, flags, ["cold_start.steps=0", "threads=1", *overrides])


def test_one_objective_is_built_for_the_shared_policy(monkeypatch, tmp_path):
    built = constructions(monkeypatch, config_of(tmp_path))
    assert [cls.name for cls in built] == ["pg"]


def test_one_objective_is_built_per_learner(monkeypatch, tmp_path):
    two = learner_flags(["player_0", "player_1=tiny"])
    built = constructions(monkeypatch, config_of(tmp_path, learners=two))
    assert [cls.name for cls in built] == ["pg", "pg"]


def test_each_learner_trains_with_its_own_bound_objective(tmp_path):
    two = learner_flags(["player_0", "player_1=tiny"])
    planned = plan(config_of(tmp_path, ["learners.player_1.train.lr=0.01"], learners=two))
    first, second = (planned.learner(name).objective for name in ("player_0", "player_1"))
    assert first is not second  # the same options, still an objective each
    assert first.options.kl_coef == 0.05  # its settings are its options
    assert planned.learner("player_1").config.train.lr == 0.01


def test_the_plan_carries_the_banner_and_the_resolved_config(tmp_path):
    planned = plan(config_of(tmp_path, ["train.minibatch_size=16"]))
    assert planned.config.recipe == "tictactoe"
    assert "train.minibatch_size=16 (recipe: 64)" in planned.recipe_line
    assert planned.learner(None).config is planned.config


def test_a_setting_the_objective_does_not_read_is_still_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"objective_options\.clip"):
        plan(config_of(tmp_path, ["objective_options.clip=0.3"], objective="sft"))
