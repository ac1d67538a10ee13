"""A run's served rollout back-end: its servers, the learner that plays on them, the weight sync.

``rollout.workers=N`` starts N `selfplay serve` workers on this machine
(core/serving/local_workers.py); ``rollout.servers`` names servers already running. Either way
every server is checked before any work (core/serving/rollout_client.py), the learner's seats
are held by a `ServedLearner` and the weights reach the servers through a `WeightSync`.

What served rollouts support, each checked before a run folder exists:

- ``generation.choice=legal`` and ``legal-pg``: each legal answer is scored on the servers
  (prompt log-probabilities, core/serving/legal_choice.py).
- ``dpo``, ``sft``, ``pg`` with any estimator, branches: served like any turn of the learner.
- ``lora.per_role``: refused (one adapter per role would need one served name per role).
- several training processes (``--devices``): refused; one trainer process drives the servers.
- several learners: each has servers of its own — ``rollout.workers`` local workers each, or
  the servers it names (``learners.NAME.servers``; the run's ``rollout.servers`` refused) —
  and its own weight sync; every learner's turns are served, or none.

A setting only served rollouts read (the staleness cap and what is done past it, the queue,
a local worker's threads and cores) is refused in a run that plays in this process, which
would ignore it; a resume keeps its folder's settings as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.core.config.learners import served
from selfplay.core.config.rollout import RolloutConfig
from selfplay.core.serving.local_workers import LocalWorkers
from selfplay.core.serving.rollout_client import ServedLearner, Worker, Workers
from selfplay.core.serving.weight_sync import WeightSync, WeightSyncs


def check_rollout_servers(config: Any, world_size: int = 1) -> None:
    """Refuse, before any work, what rollouts on servers do not support (see the module doc)."""
    if not config.resume:
        check_served_only(config)
    if not served(config):
        return
    where = "rollout.workers" if config.rollout.workers else "rollout.servers"
    if config.learners:
        check_learners_served(config)
        where = "rollout.workers" if config.rollout.workers else "learners.NAME.servers"
    if config.lora.enabled and config.lora.per_role:
        raise ConfigError(
            f"{where} with lora.per_role: one adapter per role would need one served model "
            "name per role, which is not built; drop lora.per_role or run in-process."
        )
    if world_size > 1 or config.hardware.devices > 1 or config.hardware.num_nodes > 1:
        raise ConfigError(
            f"{where} with several training processes: one trainer process drives the "
            "rollout servers; train in one process (--devices 1), or run in-process."
        )
    if config.rollout.workers and config.rollout.servers:
        raise ConfigError(
            "rollout.workers and rollout.servers are both set: start local workers, or name "
            "servers already running, not both."
        )


SERVED_ONLY = ("max_staleness", "queue", "stale", "age_decay")
LOCAL_WORKERS_ONLY = ("worker_threads", "pin")


def check_served_only(config: Any) -> None:
    """Refuse a setting of served rollouts, or of local workers, that the run would ignore."""
    given = _changed_rollout_settings(config)
    if not served(config) and given:
        it = "it" if len(given) == 1 else "them"
        raise ConfigError(
            f"{', '.join(given.values())}: without rollout workers or servers the run plays "
            f"and trains in turn in this process, which would ignore {it}. Serve the rollouts "
            f"(--rollout-workers N, or --set rollout.servers=openai:URL#MODEL), or drop {it}."
        )
    local = [text for key, text in given.items() if key.rsplit(".", 1)[1] in LOCAL_WORKERS_ONLY]
    if not config.rollout.workers and local:
        raise ConfigError(
            f"{', '.join(local)}: it sets the local rollout workers, and the run starts none "
            "(its servers are already running). Drop it, or start workers: --rollout-workers N."
        )


def _changed_rollout_settings(config: Any) -> dict[str, str]:
    """``{KEY: 'KEY=VALUE'}`` for each served-only setting off its default: the run's
    (``rollout.KEY``) and each learner's own (``learners.NAME.KEY``)."""
    default = RolloutConfig()
    sections = [("rollout", config.rollout)]
    sections += [(f"learners.{name}", own) for name, own in config.learners.items()]
    found = {}
    for where, section in sections:
        for key in (*SERVED_ONLY, *LOCAL_WORKERS_ONLY):
            value = getattr(section, key, None)
            if value is not None and value != getattr(default, key):
                shown = str(value).lower() if isinstance(value, bool) else value
                found[f"{where}.{key}"] = f"{where}.{key}={shown}"
    return found


def check_learners_served(config: Any) -> None:
    """Several learners are served by local workers (``rollout.workers`` each) or by servers
    of their own (``learners.NAME.servers``), every learner alike."""
    if config.rollout.servers:
        raise ConfigError(
            "rollout.servers with several learners: each learner has a model of its own, so "
            "each names the servers of its base model: learners.NAME.servers=openai:URL#MODEL "
            "(or start local workers: rollout.workers=N, N for each learner)."
        )
    without = [name for name, learner in config.learners.items() if not learner.servers]
    if config.rollout.workers and len(without) < len(config.learners):
        raise ConfigError(
            "rollout.workers and learners.NAME.servers are both set: start local workers for "
            "every learner, or name every learner's servers, not both."
        )
    if not config.rollout.workers and without:
        raise ConfigError(
            f"Learner(s) {', '.join(without)} name no servers while others do: served "
            "rollouts play every learner on servers (a learner in-process would play while "
            "it trains). Set learners.NAME.servers for each, or use rollout.workers=N."
        )


@dataclass
class Backend:
    """The served learners by name (``learner`` for the shared policy), their weight sync and
    the local workers started for them."""

    learners: dict[str, ServedLearner]
    sync: WeightSyncs
    local: list[LocalWorkers] = field(default_factory=list)

    @property
    def learner(self) -> ServedLearner:
        return next(iter(self.learners.values()))

    def close(self) -> None:
        for workers in self.local:
            workers.stop()


def served_backend(
    config: Any,
    learners: Sequence[Any],
    folder: Path,
    threads: int,
    say: Any,
    cores: list[list[int]] | None = None,
) -> Backend:
    """Start (or reach) every learner's servers, check them, and wire each learner and its
    weight sync.

    ``learners`` are the run's (`Learner`: its policy, its model, its settings); ``folder`` the
    run folder; ``cores`` each local worker's CPU cores (None: any), ``rollout.workers`` of
    them for each learner in turn. A learner of several keeps its weights under
    ``rollout/NAME/`` and its workers are ``selfplay serve --rollout-worker --learner NAME``."""
    several = bool(config.learners)
    backend = Backend({}, WeightSyncs([]))
    count = config.rollout.workers
    try:
        for index, trained in enumerate(learners):
            name = trained.name if several else None
            told = (lambda text, n=name: say(f"{n}: {text}")) if name else say
            rollout_folder = Path(folder) / "rollout" / (name or "")
            rollout_folder.mkdir(parents=True, exist_ok=True)
            names = list(trained.config.rollout.servers)
            if count:
                mine = cores[index * count : (index + 1) * count] if cores else None
                local = LocalWorkers(folder, count, threads, mine, learner=name)
                backend.local.append(local)
                names = local.start()
                pinned = f", on cores {mine}" if mine else ""
                told(f"rollout: {len(names)} local worker(s), {threads} thread(s) each{pinned}")
            workers = [Worker(spec) for spec in names]
            for worker in workers:
                worker.check(trained.policy.tokenizer)
            served_learner = ServedLearner(trained.policy, Workers(workers, told))
            backend.learners[trained.name] = served_learner
            model = trained.model.module
            lora = trained.config.lora.enabled
            backend.sync.syncs.append(WeightSync(served_learner, model, rollout_folder, lora))
    except BaseException:
        backend.close()
        raise
    return backend
