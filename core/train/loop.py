"""The self-play training loop, on Lightning Fabric.

    each iteration:  seat the matches (opponent sampler) -> play them in lock-step (rollout)
                     -> rewards -> per-turn returns -> advantages (estimator) -> update
                     -> log, evaluate, checkpoint

Fabric owns devices, precision, the DDP / DeepSpeed strategies, checkpoint I/O and loggers;
the loop itself is ours. Every process draws the same seatings and seeds and plays its own
share of the matches; estimator statistics are summed across processes; process 0 alone
writes the run folder.
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass, field
from typing import Any

import lightning as L
import torch
import torch.distributed

from selfplay.api.reward import RewardContext
from selfplay.api.sampler import LEARNER
from selfplay.api.types import Episode
from selfplay.core.config import ConfigError, RunConfig
from selfplay.core.evaluate import EvalResult, evaluate, task_metrics
from selfplay.core.models.lora import (
    adapter_state_dict,
    apply_lora,
    load_adapter_state_dict,
    reference_logits_context,
)
from selfplay.core.models.reward_models import RewardModels
from selfplay.core.rollout import play
from selfplay.core.stats import episode_metrics
from selfplay.core.train import checkpoint
from selfplay.core.train.build import (
    Seats,
    build_callbacks,
    build_estimator,
    build_game,
    build_learner,
    build_reward,
    build_sampler,
)
from selfplay.core.train.cold_start import warm_up
from selfplay.core.train.episode_log import write_episodes
from selfplay.core.train.hardware import build_fabric, gradient_clipper
from selfplay.core.train.league import League
from selfplay.core.train.run_folder import RunFolder, make_run_folder
from selfplay.core.train.samples import episode_samples
from selfplay.core.train.seating import seat_matches
from selfplay.core.train.update import Updater, check_reference, pull_reference


@dataclass
class Progress:
    """Counters that a checkpoint carries besides the model and optimiser."""

    iteration: int = 0
    episodes_bytes: int = 0
    before: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class TrainResult:
    folder: RunFolder | None
    rows: list[dict[str, Any]]
    before: dict[str, EvalResult]
    after: dict[str, EvalResult]


def train(config: RunConfig, console: Any = None) -> TrainResult:
    fabric = build_fabric(config)
    fabric.launch()
    if config.threads:
        torch.set_num_threads(config.threads)
    return Trainer(fabric, config, console).run()


class Trainer:
    def __init__(self, fabric: L.Fabric, config: RunConfig, console: Any = None) -> None:
        self.fabric, self.config, self.console = fabric, config, console
        self.main = fabric.global_rank == 0
        torch.manual_seed(config.seed)
        self.game = build_game(config)
        self.sampler = build_sampler(config)
        self.reward = build_reward(config, self.game)
        self.estimator = build_estimator(config)
        self.estimator.bind(self.game.name, self.game.roles)
        self.callbacks = build_callbacks(config)
        self.learner = build_learner(config)
        self.learner.name = LEARNER
        self.seats = Seats(self.learner, self.game)
        self.rng = random.Random(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.progress = Progress()
        self.folder = self._open_folder()
        self.tensorboard: Any = None

    # ---- set-up ----------------------------------------------------------------------------

    def _open_folder(self) -> RunFolder | None:
        folder = None
        if self.main:
            if self.config.resume:
                folder = RunFolder(self.config.resume)
            else:
                folder = make_run_folder(self.config)
                folder.write_config(self.config)
        return folder

    def _prepare_model(self, resuming: bool) -> None:
        config, learner = self.config, self.learner
        if config.lora.enabled:
            learner.model = apply_lora(learner.model, config.lora, self.game.roles)
        learner.model = learner.model.to(self.fabric.device)  # the cold start trains there too
        if not resuming:
            warm_up(learner, self.game, config, self._say)
        needs_reference = config.train.kl_coef > 0 or "reference" in self.reward.models
        check_reference(config)
        params = [p for p in learner.model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(
            params, lr=config.train.lr, weight_decay=config.train.weight_decay
        )
        model, optimizer = self.fabric.setup(learner.model, optimizer)
        learner.model = model.module  # generation runs on the plain module; weights are shared
        self.reference = None
        if needs_reference and not config.lora.enabled:  # a copy on the device, in its precision
            self.reference = copy.deepcopy(learner.model).eval().requires_grad_(False)
        # under LoRA the reference is the adapters as the cold start left them (a few tensors)
        self.lora_reference = adapter_state_dict(model.module) if config.lora.enabled else None
        self.model, self.optimizer = model, optimizer
        self.updater = Updater(
            model=model,
            optimizer=optimizer,
            config=config.train,
            pad_id=learner.pad_id,
            backward=self.fabric.backward,
            clip_gradients=gradient_clipper(self.fabric, config.hardware.strategy),
            reference=(lambda: reference_logits_context(model.module, self.lora_reference))
            if config.lora.enabled
            else None,
            reference_model=self.reference,
            temperature=config.generation.temperature,
            role_context=self._role_context(model),
        )
        self.learner.role_context = self.updater.role_context
        models = RewardModels(config, learner, self.reference, lambda: self.lora_reference)
        self.reward.bind(RewardContext(game=self.game, policy=models))

    def _role_context(self, model: Any) -> Any:
        """With one LoRA adapter per role, generation and scoring switch adapters by role."""
        if not (self.config.lora.enabled and self.config.lora.per_role):
            return None
        from selfplay.core.models.lora import use_adapter

        return lambda role: use_adapter(model.module, role)

    # ---- the loop --------------------------------------------------------------------------

    def run(self) -> TrainResult:
        from selfplay.core.commands.progress import RunDisplay

        resume_from = checkpoint.latest(self.config.resume) if self.config.resume else None
        self._prepare_model(resuming=resume_from is not None)
        path = self.folder.path if self.folder else None
        self.league = League(self, path, self._shared_folder(path))
        if resume_from is not None:
            self._restore(resume_from)
        elif self.config.resume and self.main and self.folder:
            self.folder.truncate(0, 0)  # killed before its first checkpoint: start over
        start = self.progress.iteration
        if resume_from is None:
            self.league.start()
        self.started = time.perf_counter()
        if self.config.resume and start >= self.config.iterations:
            raise ConfigError(
                f"{self.config.resume} has already trained {start} iterations; "
                f"--iterations {self.config.iterations} leaves nothing to train. "
                "--iterations is the total: pass a larger one."
            )
        before = self._before_eval()
        rows: list[dict[str, Any]] = []
        for callback in self.callbacks:
            callback.on_train_start(self)
        display = RunDisplay(self.config, self.folder, self.console, enabled=self.main)
        with display:
            for iteration in range(start + 1, self.config.iterations + 1):
                row = self.iteration(iteration)
                if self.config.eval.every and iteration % self.config.eval.every == 0:
                    row.update(self._eval_metrics(self.evaluate()))
                for callback in self.callbacks:
                    callback.on_iteration_metrics(self, iteration, self.episodes, row)
                row["elapsed_seconds"] = time.perf_counter() - self.started
                self._log(row)
                rows.append(row)
                display.update(row)
                last = iteration == self.config.iterations or self._out_of_time()
                if last or iteration % self.config.checkpoint_every == 0:
                    self.save(iteration)
                for callback in self.callbacks:
                    callback.on_iteration_end(self, iteration, row)
                if last:
                    break
            after = self.evaluate()
            display.summary(before, after)
        if self.tensorboard is not None:
            self.tensorboard.finalize("success")
        result = TrainResult(self.folder, rows, before, after)
        for callback in self.callbacks:
            callback.on_train_end(self, result)
        return result

    def iteration(self, iteration: int) -> dict[str, Any]:
        config, fabric = self.config, self.fabric
        started = time.perf_counter()
        seatings, seeds = seat_matches(
            self.game, self.sampler, self.seats, self.rng, config.matches, self.league.members
        )
        share = slice(fabric.global_rank, None, fabric.world_size)
        episodes = play(self.game, seatings[share], seeds[share])
        played = time.perf_counter()
        scores = self.reward(episodes, reduce=self._sum)
        invalid_reward = config.train.invalid_reward
        if invalid_reward is None:
            invalid_reward = config.invalid_moves.penalty
        samples = episode_samples(episodes, scores, LEARNER, config.train.gamma, invalid_reward)
        samples = [s for s in samples if self._trains(s.role, iteration)]
        advantages = self.estimator(samples, reduce=self._sum)
        kept = [(s, a) for s, a in zip(samples, advantages, strict=True) if a is not None]
        chunks = self._minibatches(len(kept))
        stats = self.updater.update(
            [s for s, _ in kept], [a for _, a in kept], self.generator, chunks
        )
        if config.train.reference_update and self.reference is not None:
            pull_reference(self.reference, self.model.module, config.train.reference_update)
        everyone = self._gather_episodes(episodes)
        self.episodes = everyone  # the iteration's matches, for on_iteration_metrics
        if self.main and self.folder:
            write_episodes(self.folder.episodes, everyone)
        totals = [s.totals(ep) for ep, s in zip(episodes, scores, strict=True)]
        row = {"iteration": iteration, **episode_metrics(episodes, totals, self._sum)}
        row.update(self.reward.metrics())
        row.update(stats.means())
        row.update(self.league.after_iteration(iteration, everyone))
        row["advantage_mean"] = sum(a for _, a in kept) / max(len(kept), 1)
        row["rollout_seconds"] = played - started
        row["update_seconds"] = time.perf_counter() - played
        return row

    # ---- pieces ----------------------------------------------------------------------------

    def _out_of_time(self) -> bool:
        """Every process must agree, so process 0's clock decides."""
        limit = self.config.minutes
        if limit is None:
            return False
        late = torch.tensor(
            float(time.perf_counter() - self.started > limit * 60), device=self.fabric.device
        )
        return bool(self.fabric.broadcast(late, src=0).item())

    def _trains(self, role: str, iteration: int) -> bool:
        every = self.config.train.stagger.get(role, 1)
        return iteration % every == 0

    def _sum(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.fabric.world_size == 1:
            return tensor
        # NCCL reduces only tensors on the GPU; the statistics live on the CPU
        total = self.fabric.all_reduce(tensor.float().to(self.fabric.device), reduce_op="sum")
        return total.cpu().double()

    def _minibatches(self, count: int) -> int:
        """Optimiser steps this iteration: equal on every process (collective backward)."""
        size = self.config.train.minibatch_size
        fewest = count
        if self.fabric.world_size > 1:
            counts = self.fabric.all_gather(torch.tensor(count, device=self.fabric.device))
            fewest = int(counts.min())
        return 0 if fewest == 0 else -(-fewest // size)

    def _gather_episodes(self, episodes: list[Episode]) -> list[Episode]:
        if self.fabric.world_size == 1:
            return episodes
        gathered: list[Any] = [None] * self.fabric.world_size
        torch.distributed.all_gather_object(gathered, [e.to_dict() for e in episodes])
        return [Episode.from_dict(d) for part in gathered for d in part]

    def evaluate(self) -> dict[str, EvalResult]:
        ev = self.config.eval
        return evaluate(
            self.game,
            self.learner,
            opponents=ev.opponents,
            matches=ev.matches,
            seed=self.config.seed + 7919,
        )

    def _before_eval(self) -> dict[str, EvalResult]:
        if self.progress.before:
            return {k: EvalResult(**v) for k, v in self.progress.before.items()}
        before = self.evaluate()
        self.progress.before = {k: v.__dict__.copy() for k, v in before.items()}
        return before

    def _eval_metrics(self, results: dict[str, EvalResult]) -> dict[str, float]:
        row: dict[str, float] = {}
        for result in results.values():
            row.update(result.as_metrics("eval"))
        ev = self.config.eval
        row.update(task_metrics(self.game, self.learner, ev.matches, self.config.seed + 7919))
        return row

    def _log(self, row: dict[str, Any]) -> None:
        if not (self.main and self.folder):
            return
        self.folder.append_metrics(row)
        if self.tensorboard is None:
            from lightning.fabric.loggers import TensorBoardLogger

            root = self.folder.path / "tensorboard"
            self.tensorboard = TensorBoardLogger(root_dir=root, name="", version="")
        numbers = {k: float(v) for k, v in row.items() if isinstance(v, int | float)}
        self.tensorboard.log_metrics(numbers, step=row["iteration"])

    def _say(self, text: str) -> None:
        if self.main and self.console is not None:
            self.console.print(text)

    # ---- checkpoints -----------------------------------------------------------------------

    def save(self, iteration: int) -> None:
        self.progress.iteration = iteration
        if self.main and self.folder:
            self.progress.episodes_bytes = self.folder.episodes_size()
        state: dict[str, Any] = {
            "optimizer": self.optimizer,
            "estimator": self.estimator.state_dict(),
            "sampler": self.sampler.state_dict(),
            "league": self.league.state_dict(),
            "reward": self.reward.state_dict(),
            "rng": checkpoint.rng_state(self.rng, self.generator),
            "progress": self.progress.__dict__.copy(),
            "nonfinite_streak": self.updater.nonfinite_streak,
            "config_hash": checkpoint.config_hash(self.config.model_dump(mode="json")),
        }
        if self.config.lora.enabled:
            state["adapters"] = adapter_state_dict(self.model.module)
            state["lora_reference"] = self.lora_reference
        else:
            state["model"] = self.model
        if self.reference is not None:
            state["reference"] = self.reference.state_dict()
        path = self.folder.path if self.folder else self.config.resume or self.config.out
        checkpoint.save(self.fabric, self._shared_folder(path), iteration, state)
        self.league.after_checkpoint()
        if self.main:
            self.league.write_reports()

    def _shared_folder(self, path: Any) -> Any:
        """Every process needs the run folder's path (only process 0 made it)."""
        return self.fabric.broadcast(path, src=0)

    def _restore(self, path: Any) -> None:
        state: dict[str, Any] = {"optimizer": self.optimizer}
        if not self.config.lora.enabled:
            state["model"] = self.model
        rest = checkpoint.load(self.fabric, path, state)
        saved_hash = rest["config_hash"]
        current = checkpoint.config_hash(self.config.model_dump(mode="json"))
        if saved_hash != current:
            raise checkpoint.CheckpointError(
                f"The checkpoint {path} was written with a different config ({saved_hash} vs "
                f"{current}); resume with the run folder's own config.yaml."
            )
        if self.config.lora.enabled:
            load_adapter_state_dict(self.model.module, rest["adapters"])
            self.lora_reference = rest.get("lora_reference", self.lora_reference)
        if self.reference is not None:
            self.reference.load_state_dict(rest["reference"])
        self.estimator.load_state_dict(rest["estimator"])
        self.sampler.load_state_dict(rest["sampler"])
        self.league.load_state_dict(rest["league"])
        self.reward.load_state_dict(rest["reward"])
        checkpoint.restore_rng(rest["rng"], self.rng, self.generator)
        self.progress = Progress(**rest["progress"])
        self.updater.nonfinite_streak = rest["nonfinite_streak"]
        if self.main and self.folder:
            self.folder.truncate(self.progress.iteration, self.progress.episodes_bytes)
