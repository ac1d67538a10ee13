"""`selfplay serve`: a trained checkpoint behind an OpenAI-compatible endpoint.

    selfplay serve RUN_DIR|CHECKPOINT [--port 8000] [--host 127.0.0.1] [--name NAME]
                   [--learner NAME]                     one learner of a run of several
    selfplay serve RUN_DIR --rollout-worker [--threads N]   a rollout worker of a running run

Other tools can then play, judge or face the trained model (`openai:URL#NAME` in another
run). A LoRA run serves its base with the trained adapters, and takes more adapters at run
time through vLLM's dynamic-LoRA endpoints (core/serving/server.py). With
``--rollout-worker`` it serves the run's learner as the run builds it, and takes the
trainer's weights through the weight-transfer routes (or adapters): a rollout worker, which
`selfplay run` starts itself with ``--set rollout.workers=N`` (docs/serving.md). Needs the
``serve`` extra: ``pip install 'selfplay-rl[serve]'``.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from selfplay.api.errors import ConfigError


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("source", type=Path, metavar="RUN_DIR|CHECKPOINT", help="the run (or checkpoint) to serve")
    add("--port", type=int, default=8000, help="port to listen on (default 8000; 0: a free one)")
    add("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, local only)")
    add("--name", help="the model name clients ask for (default: the run folder's name)")
    add("--max-batch", type=int, default=32, help="requests answered in one batch (default 32)")
    add("--learner", metavar="NAME", help="in a run of several learners: which one to serve")
    add(
        "--rollout-worker",
        action="store_true",
        help="serve the run's learner as the run builds it, taking the trainer's weights "
        "through the weight-transfer routes: a rollout worker",
    )
    add("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    add(
        "--stop-with-stdin",
        action="store_true",
        help="stop when standard input closes (a worker started by `selfplay run` stops when "
        "the run does, also when it is killed)",
    )


def cmd_serve(args: argparse.Namespace) -> int:
    if args.max_batch < 1:
        raise ConfigError(f"--max-batch must be at least 1, got {args.max_batch}.")
    if not 0 <= args.port < 65536:
        raise ConfigError(f"--port must be 0..65535, got {args.port}.")
    if args.threads < 0:
        raise ConfigError(f"--threads must be 0 or more, got {args.threads}.")
    if args.threads:
        from selfplay.core.machine.hardware import set_threads

        set_threads(args.threads)
    if args.stop_with_stdin:
        threading.Thread(target=_stop_at_end_of_input, name="stdin-watch", daemon=True).start()
    if args.rollout_worker:
        service, label = learner_service(args.source, args.name, args.max_batch, args.learner)
    else:
        service, label = build_service(args.source, args.name, args.max_batch, args.learner)
    server = Server(create_app(service), args.host, args.port)
    print(f"Serving {label} as model {service.name!r}")
    print(f"  OpenAI-compatible API at {server.url}  (chat/completions, completions, models)")
    if service.adapters.lora:
        print(f"  LoRA adapters load at {server.url}/load_lora_adapter")
    print(f"  e.g. --opponent fixed:openai:{server.url}#{service.name}", flush=True)
    print("Ctrl-C stops it.", flush=True)
    try:
        server.run()
    finally:
        service.batcher.close()
    return stopped_by_signal(server)


def stopped_by_signal(server: Server) -> int:
    """128 + the signal that stopped uvicorn (130 for Ctrl-C), else 0.

    uvicorn catches SIGINT and SIGTERM itself, shuts down and raises the signal again under
    the handler it found; a process that inherited an ignored SIGINT (a background job, a
    batch script) then ends normally, and the exit code would say it succeeded.
    """
    captured = list(getattr(server.server, "_captured_signals", []) or [])
    if captured:
        print("interrupted", file=sys.stderr)
        return 128 + int(captured[0])
    return 130 if server.server.should_exit else 0


def build_service(
    source: Path, name: str | None = None, max_batch: int = 32, learner: str | None = None
) -> tuple[Any, str]:
    """The chat service over the newest checkpoint of ``source`` (in a run of several learners,
    ``learner``'s), and what it serves."""
    from selfplay.core.commands.play import find_checkpoint, load_checkpoint_policy
    from selfplay.core.serving.server import ChatService
    from selfplay.plugins.manager import registries

    _require_web_stack()
    folder, _ = find_checkpoint(source)
    loaded = load_checkpoint_policy(source, learner)
    config = loaded.config
    if not hasattr(loaded.policy, "model"):
        raise ConfigError(f"The model {config.model!r} of this run is not a model in memory.")
    roles = registries().games.get(config.game).roles if config.lora.per_role else ()
    name = name or folder.resolve().name + (f"-{learner}" if learner else "")
    if ":" in name:
        raise ConfigError(f"--name {name!r}: a model name has no ':' (it picks a role).")
    service = ChatService(
        loaded.policy, name, lora=config.lora.enabled, roles=roles, max_batch=max_batch
    )
    return service, loaded.label


def learner_service(
    source: Path, name: str | None = None, max_batch: int = 32, learner: str | None = None
) -> Any:
    """The chat service over the learner of run folder ``source`` (``learner``, of a run of
    several), as the run builds it (its weights arrive through the weight-transfer routes),
    and what it serves."""
    from selfplay.core.commands.play import _chosen_learner
    from selfplay.core.models.loading import build_learner
    from selfplay.core.models.lora import apply_lora
    from selfplay.core.run.folder.run_folder import read_config
    from selfplay.core.serving.server import ChatService
    from selfplay.plugins.manager import registries

    _require_web_stack()
    config = read_config(Path(source))
    config, _, _ = _chosen_learner(config, Path(source), learner)  # a learner's settings
    policy = build_learner(config)
    if config.lora.enabled:
        roles = registries().games.get(config.game).roles
        policy.model = apply_lora(policy.model, config.lora, roles)
    service = ChatService(
        policy,
        name or "learner",
        lora=config.lora.enabled,
        max_batch=max_batch,
        weight_transfer="file",
    )
    which = f"learner {learner}" if learner else "the learner"
    return service, f"{which} of {source} (weights from its trainer)"


def _stop_at_end_of_input() -> None:
    """Exit once standard input reaches its end: the process that started us is gone."""
    import os
    import sys

    while sys.stdin.buffer.read(1 << 16):
        pass
    os._exit(0)


def create_app(service: Any) -> Any:
    from selfplay.core.serving.server import create_app as app

    return app(service)


def _require_web_stack() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        raise ConfigError(
            f"selfplay serve needs starlette and uvicorn ({err}); install them with "
            "pip install 'selfplay-rl[serve]'."
        ) from None


class Server:
    """uvicorn on ``host:port`` (0: a free port); ``run()`` blocks, ``start()`` uses a thread."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self.socket = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((host, port))
        except OSError as err:
            raise ConfigError(
                f"Cannot listen on {host}:{port} ({err.strerror}); pick another --port "
                "(0 takes a free one) or --host."
            ) from None
        self.host, self.port = host, self.socket.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def run(self) -> None:
        self.server.run(sockets=[self.socket])

    def start(self, timeout: float = 10.0) -> Server:
        self.thread = threading.Thread(target=self.run, name="selfplay-uvicorn", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.server.started:
            raise RuntimeError(f"The server at {self.url} did not start in {timeout} s.")
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)
        self.socket.close()
