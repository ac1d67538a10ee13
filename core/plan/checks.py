"""The refusals before any work: what a run's settings and its plug-ins must agree on, checked
before the run folder, the model or the cold start exist.

Each names the bad setting and the way out (a ConfigError, exit 2). The settings alone are
checked as the run is planned (`resolve`, recipes.py); what needs the built plug-ins (the game's
roles and players, the rewards' models) in one call, `check_parts`, before any learner is built.
Checks that belong to another room stay there, named by these two: the league's keep-best
(core/league/keep_best.py), the rollout servers (core/serving/backend.py), the hardware's
strategy (core/machine/hardware.py), the loggers (core/run/trackers.py).
"""

from __future__ import annotations

from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.game import Game
from selfplay.api.objective import Objective
from selfplay.api.policy import has_player
from selfplay.api.sampler import is_served
from selfplay.core.config import RunConfig
from selfplay.core.config.learners import NAME, RESERVED, learner_config, learner_roles, served
from selfplay.core.league.keep_best import check_keep_best
from selfplay.core.models.policy_table import check_choice
from selfplay.core.plan.build import describe_reads, split_spec
from selfplay.core.plan.objectives import Objectives
from selfplay.core.plan.ownership import unread_settings


def check_given(objective: Any, config: RunConfig, given: dict[str, Any]) -> None:
    """Refuse a setting the user gave that the objective does not read (it would do
    nothing); a resumed run was checked when it started."""
    if config.resume is not None:
        return
    unread = sorted(unread_settings(objective, given))
    if unread:
        raise ConfigError(_unread_message(unread, f"objective {config.objective!r}", objective))


def check_learner_settings(config: RunConfig, objectives: Objectives | None = None) -> None:
    """Refuse a learner's own setting (``learners.NAME.train.KEY``, its estimator) that the
    learner's objective does not read, as `check_given` refuses the run's."""
    if config.resume is not None:
        return
    objectives = objectives or Objectives()
    for name, learner in config.learners.items():
        own = {f"train.{key}" for key in (learner.train.model_fields_set if learner.train else ())}
        own |= {f"objective_options.{key}" for key in learner.objective_options or {}}
        own |= {key for key in ("estimator", "estimator_options") if getattr(learner, key)}
        mine = learner_config(config, name)
        objective = objectives.asked(mine)
        unread = sorted(f"learners.{name}.{key}" for key in unread_settings(objective, own))
        if unread:
            which = f"the objective {mine.objective!r} of learner {name!r}"
            raise ConfigError(_unread_message(unread, which, objective))


def check_schedules(config: RunConfig) -> None:
    """Refuse ``train.lr_decay_iterations`` where the learning-rate schedule does not read it,
    and ``train.kl_coef_min`` where the KL coefficient does not fall to it: the run's, and each
    learner's (its own train keys over the run's)."""
    for name in [None, *config.learners]:
        train = (learner_config(config, name) if name else config).train
        decay, warm = train.lr_decay_iterations, train.lr_warmup
        where = f"learners.{name}.train" if name else "train"
        _check_kl_floor(train, where)
        if decay is None:
            continue
        if train.lr_schedule != "cosine":
            raise ConfigError(
                f"{where}.lr_decay_iterations={decay} is read by the cosine schedule only, and "
                f"{where}.lr_schedule is {train.lr_schedule!r}: set {where}.lr_schedule=cosine "
                "or leave lr_decay_iterations out."
            )
        if decay <= warm + 1:
            raise ConfigError(
                f"{where}.lr_decay_iterations={decay} leaves the cosine no iteration after "
                f"{where}.lr_warmup={warm}: give more than {warm + 1}, or leave it out."
            )


def _check_kl_floor(train: Any, where: str) -> None:
    floor, step, cap = train.kl_coef_min, train.kl_coef_step, train.kl_coef_max
    if floor and step >= 0:
        raise ConfigError(
            f"{where}.kl_coef_min={floor} is the floor of a KL coefficient that falls, and "
            f"{where}.kl_coef_step is {step}: give a negative step (for instance -0.001), or "
            "leave kl_coef_min out."
        )
    if floor and cap is not None and floor > cap:
        raise ConfigError(
            f"{where}.kl_coef_min={floor} is above {where}.kl_coef_max={cap}: the floor must "
            "not be above the cap."
        )


def _unread_message(unread: list[str], whose: str, objective: Any) -> str:
    one = len(unread) == 1
    why = "" if objective.needs == "advantages" else " (it needs no advantages: no estimator runs)"
    return (
        f"{', '.join(unread)}: {whose} does not read "
        f"{'this setting' if one else 'these settings'}{why}, so {'it' if one else 'they'} "
        f"would do nothing. It reads {describe_reads(objective)}; drop "
        f"{'it' if one else 'them'}, or choose an objective that reads "
        f"{'it' if one else 'them'} (`selfplay objectives`)."
    )


def check_stale(config: RunConfig, objective: Objective) -> None:
    """A run that trains samples of older weights (served, ``max_staleness`` > 0) needs an
    objective that says what it does with them (`Objective.stale`)."""
    rollout = config.rollout
    if not served(config) or not rollout.max_staleness:
        return
    if objective.stale == "refuses":
        raise ConfigError(
            f"rollout.max_staleness={rollout.max_staleness} with objective "
            f"{config.objective!r}: {objective.stale_reason}. Train in turn "
            "(rollout.max_staleness=0) or with an objective that corrects stale samples (pg)."
        )
    if rollout.stale == "reweight" and objective.stale != "corrects":
        raise ConfigError(
            f"rollout.stale=reweight with objective {config.objective!r}: it trains a stale "
            "sample as it is and takes no age weights (pg and legal-pg do). Use "
            "rollout.stale=wait or drop."
        )


def check_parts(config: RunConfig, game: Game, models: Any) -> None:
    """What the settings and the built plug-ins must agree on (``models``: the rewards' judges),
    before any learner, run folder or model exists."""
    check_players(config, game)
    check_keep_best(config)
    check_learner_judges(config, models)
    if config.learners:
        check_learners(config, game)


def check_players(config: RunConfig, game: Game) -> None:
    """Every scripted player the config names is one of the game's, checked before any work
    (the cold start and the first evaluation come much later); so is ``generation.choice``."""
    check_choice(config.generation.choice, game)
    named = {
        "eval.opponents": config.eval.opponents or [],
        "pool.scripted": [
            name.removeprefix("scripted:") for name in config.pool.scripted if not is_served(name)
        ],
    }
    if config.cold_start.steps and game.players:
        named["cold_start.players"] = config.cold_start.players
        if not config.cold_start.players:
            raise ConfigError(
                "cold_start.players is empty; name the demonstrators (e.g. [random]) or set "
                "cold_start.steps=0."
            )
    check_served_names(config)
    for key, players in named.items():
        unknown = [name for name in players if not has_player(game, name)]
        if unknown:
            known = ", ".join(sorted(game.players)) or "none"
            raise ConfigError(
                f"{key} names {', '.join(map(repr, unknown))}, which {game.name} does not "
                f"have; its scripted players are: {known} (`selfplay games` lists them; "
                f"NAME~0.3 plays a random move 3 times in 10)."
            )


def check_served_names(config: RunConfig) -> None:
    """Every served model the config names (``openai:URL#MODEL``) is well formed, checked
    before any work; whether its server answers shows at its first turn."""
    from selfplay.core.models.served.policy import ServedSpec

    _, opponent = split_spec(config.opponent)
    named = {"--opponent": [opponent or ""], "pool.scripted": list(config.pool.scripted)}
    named["rollout.servers"] = list(config.rollout.servers)
    for name, learner in config.learners.items():
        named[f"learners.{name}.servers"] = list(learner.servers)
    for reward, options in config.reward_options.items():
        named[f"reward_options.{reward}.model"] = [str(options.get("model", ""))]
    for key, names in named.items():
        for name in names:
            if is_served(name):
                ServedSpec.parse(name, key)
    if config.pool.server is not None:
        check_pool_server(config)


def check_pool_server(config: RunConfig) -> None:
    """``pool.server`` names a server only, and the run trains one LoRA adapter."""
    from selfplay.core.league.snapshots import NOT_LORA
    from selfplay.core.models.served.policy import ServedSpec

    server = config.pool.server or ""
    if not config.lora.enabled:
        raise ConfigError(NOT_LORA.format(server=server))
    if config.lora.per_role:
        raise ConfigError(
            f"pool.server={server!r} serves one adapter per snapshot; a run with one adapter "
            "per role (lora.per_role) would need one served name per role, which is not "
            "built. Drop pool.server or lora.per_role."
        )
    if not is_served(server):
        raise ConfigError(
            f"pool.server={server!r} is not a server: write openai:http://HOST:PORT/v1."
        )
    learners = [learner_config(config, name) for name in config.learners]
    models = {f"{c.model} {c.model_options}" if c.model_options else c.model for c in learners}
    if len(models) > 1:
        raise ConfigError(
            f"pool.server={server!r} plays every snapshot as an adapter on the server's one "
            "base model, but this run's learners have different models "
            f"({', '.join(sorted(models))}). Drop pool.server (snapshots are then played in "
            "the training process)."
        )
    spec = ServedSpec.parse(server, "pool.server", server=True)
    if spec.model is not None or spec.lora is not None:
        raise ConfigError(
            f"pool.server={server!r} names the server only: each snapshot is asked for by its "
            "adapter name (<run>-snapshot-N) and loaded from the run's pool/ folder; drop "
            "the #MODEL and lora= parts."
        )


def check_learners(config: RunConfig, game: Game) -> None:
    """Refuse, before any run folder exists, learners that do not split the game's roles."""
    roles = ", ".join(game.roles)
    owner: dict[str, str] = {}
    for name, settings in config.learners.items():
        if not NAME.match(name) or name in RESERVED:
            raise ConfigError(
                f"learners.{name}: a learner's name is a word of letters, digits, '_' or '-' "
                f"(not {', '.join(RESERVED)}); rename it."
            )
        mine = learner_roles(name, settings)
        for role in mine:
            if role not in game.roles:
                how = (
                    f"its roles default to its name; give them: --set learners.{name}.roles=[...]"
                    if not settings.roles
                    else f"fix learners.{name}.roles"
                )
                raise ConfigError(
                    f"Learner {name!r} plays role {role!r}, which {game.name} does not have "
                    f"(its roles: {roles}); {how}."
                )
            if role in owner:
                raise ConfigError(
                    f"Role {role!r} is claimed by two learners, {owner[role]!r} and {name!r}; "
                    "each role is played by exactly one learner."
                )
            owner[role] = name
    missing = [role for role in game.roles if role not in owner]
    if missing:
        raise ConfigError(
            f"No learner plays {', '.join(map(repr, missing))} of {game.name} (roles: {roles}); "
            f"add one (--learner {missing[0]}) or add the role to a learner's roles."
        )
    if config.lora.per_role or any(
        s.lora is not None and s.lora.per_role for s in config.learners.values()
    ):
        raise ConfigError(
            "lora.per_role and learners do not go together: per-role LoRA trains one adapter per "
            "role on one shared base model, learners train a model (or adapter) each. Drop "
            "lora.per_role, or drop the learners for per-role adapters on one base."
        )


def check_learner_judges(config: RunConfig, models: Any) -> None:
    """With several learners, a judge that is a learner (or its reference) names which one."""
    if not config.learners:
        return
    for name in models:
        kind, _, which = name.partition(":")
        if kind in ("learner", "reference") and which not in config.learners:
            names = ", ".join(f"{kind}:{n}" for n in config.learners)
            raise ConfigError(
                f"A judge asks for the {name!r} model, but this run has several learners: name "
                f"which one, e.g. --set reward_options.judge.model={kind}:"
                f"{next(iter(config.learners))} ({names})."
            )
