"""A run's served rollout back-end: its servers, the learner that plays on them, the weight sync.

``rollout.workers=N`` starts N `selfplay serve` workers on this machine
(core/serving/local_workers.py); ``rollout.servers`` names servers already running. Either way
every server is checked before any work (core/serving/rollout_client.py), the learner's seats
are held by a `ServedLearner` and the weights reach the servers through a `WeightSync`.

What served rollouts support, each checked before a run folder exists:

- ``generation.choice=legal`` and ``legal-pg``: refused. The legal choice scores every legal
  answer with the model in memory; a server samples tokens.
- ``dpo``, ``sft``, ``pg`` with any estimator, branches: served like any turn of the learner.
- ``lora.per_role``: refused (one adapter per role would need one served name per role).
- several training processes (``--devices``): refused; one trainer process drives the servers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.core.serving.local_workers import LocalWorkers
from selfplay.core.serving.rollout_client import ServedLearner, Worker, Workers
from selfplay.core.serving.weight_sync import WeightSync


def check_served(config: Any, world_size: int = 1) -> None:
    """Refuse, before any work, what served rollouts do not support (see the module doc)."""
    if not config.rollout.served:
        return
    where = "rollout.workers" if config.rollout.workers else "rollout.servers"
    if config.generation.choice == "legal":
        raise ConfigError(
            f"{where} with generation.choice=legal: the legal choice scores every legal answer "
            "with the model in memory, and a server samples tokens; run it in-process "
            f"(drop {where})."
        )
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
    if config.learners:
        raise ConfigError(
            f"Served rollouts ({where}) with several learners are not built yet: generate "
            "in-process (drop it), or train one shared policy."
        )
    if config.rollout.workers and config.rollout.servers:
        raise ConfigError(
            "rollout.workers and rollout.servers are both set: start local workers, or name "
            "servers already running, not both."
        )


@dataclass
class Backend:
    learner: ServedLearner
    sync: WeightSync
    local: LocalWorkers | None

    def close(self) -> None:
        if self.local is not None:
            self.local.stop()


def served_backend(
    config: Any,
    learner: Any,
    model: Any,
    folder: Path,
    threads: int,
    say: Any,
    cores: list[list[int]] | None = None,
) -> Backend:
    """Start (or reach) the servers, check them, and wire the learner and the weight sync.

    ``model`` is the plain model the trainer updates; ``folder`` the run folder; ``cores``
    each local worker's CPU cores (None: any)."""
    rollout_folder = Path(folder) / "rollout"
    rollout_folder.mkdir(parents=True, exist_ok=True)
    local = None
    names = list(config.rollout.servers)
    if config.rollout.workers:
        local = LocalWorkers(folder, config.rollout.workers, threads, cores)
        names = local.start()
        pinned = f", on cores {cores}" if cores else ""
        say(f"rollout: {len(names)} local worker(s), {threads} thread(s) each{pinned}")
    try:
        workers = [Worker(name) for name in names]
        for worker in workers:
            worker.check(learner.tokenizer)
        served = ServedLearner(learner, Workers(workers, say))
        sync = WeightSync(served, model, rollout_folder, config.lora.enabled)
    except BaseException:
        if local is not None:
            local.stop()
        raise
    return Backend(served, sync, local)
