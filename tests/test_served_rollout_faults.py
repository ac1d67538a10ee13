"""Served rollouts when something goes wrong: a worker dies, a server that cannot be a
learner's, a weight push that keeps failing, a trainer killed with SIGKILL, and what served
mode refuses before any work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")

from selfplay.core.commands.cli import main
from selfplay.core.commands.serve import Server
from selfplay.core.models.tiny import load_tiny_policy
from selfplay.core.run import trainer
from selfplay.core.serving import local_workers
from selfplay.core.serving.server import ChatService, create_app

SMALL = ["--cold-start", "10", "--matches", "8", "--set", "eval.matches=2", "--set", "threads=1"]


def selfplay(tmp_path: Path, name: str, *args: str) -> int:
    return main(["run", *SMALL, "--out", str(tmp_path), "--name", name, *args])


@pytest.fixture
def server():
    """An external `selfplay serve` of a tiny learner that takes weights over a file."""
    service = ChatService(load_tiny_policy(seed=0), "learner", weight_transfer="file")
    running = Server(create_app(service)).start()
    yield running, service
    running.stop()
    service.batcher.close()


def served(running: Server, model: str = "learner") -> str:
    return f"rollout.servers=openai:{running.url}?retries=1&backoff=0.1#{model}"


def test_a_model_the_server_does_not_serve_is_named_with_those_it_does(tmp_path, server, capsys):
    assert selfplay(tmp_path, "x", "--set", served(server[0], "nobody")) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "does not serve the model 'nobody'" in said and "it serves: learner" in said


def test_a_server_with_another_tokenizer_is_refused(tmp_path, server, capsys, monkeypatch):
    running, service = server
    monkeypatch.setattr(service, "tokenize", lambda request: {"tokens": [1, 2, 3], "count": 3})
    assert selfplay(tmp_path, "x", "--set", served(running)) == 2
    assert "its tokenizer gives other token ids" in " ".join(capsys.readouterr().err.split())


def test_a_server_that_returns_no_logprobs_names_the_option(tmp_path, server, capsys, monkeypatch):
    running, service = server
    complete = service.completions

    async def without(request):
        reply = await complete(request)
        for choice in reply["choices"]:
            choice["logprobs"] = None
        return reply

    monkeypatch.setattr(service, "completions", without)
    assert selfplay(tmp_path, "x", "--set", served(running)) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "returned no log-probabilities" in said and "--max-logprobs" in said


def test_a_weight_push_that_keeps_failing_stops_the_run_naming_the_server(
    tmp_path, server, capsys, monkeypatch
):
    running, service = server

    def broken(request):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(service.weights, "update", broken)
    assert selfplay(tmp_path, "x", "--iterations", "2", "--set", served(running)) == 5
    said = " ".join(capsys.readouterr().err.split())
    assert running.url in said and "did not take the weights" in said


def kill_worker_after_the_first_iteration(monkeypatch, worker: int) -> None:
    """Local worker ``worker`` is killed once the first iteration has trained."""
    from selfplay.core.train import rollouts

    started: list[local_workers.LocalWorkers] = []
    start, trained = local_workers.LocalWorkers.start, rollouts.Rollouts.trained

    def remember(self):
        started.append(self)
        return start(self)

    def kill_after_the_first(self, iteration):
        trained(self, iteration)
        if iteration == 1:
            started[0].processes[worker].kill()
            started[0].processes[worker].wait()

    monkeypatch.setattr(local_workers.LocalWorkers, "start", remember)
    monkeypatch.setattr(rollouts.Rollouts, "trained", kill_after_the_first)


def test_a_worker_that_dies_mid_run_hands_its_matches_to_the_others(tmp_path, monkeypatch):
    """Two local workers; one is killed after the first iteration: the run goes on, says so
    and counts it."""
    kill_worker_after_the_first_iteration(monkeypatch, 1)
    args = ["--iterations", "3", "--rollout-workers", "2"]
    assert selfplay(tmp_path, "dies", *args, "--set", "rollout.worker_threads=1") == 0
    rows = (tmp_path / "dies" / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    failures = [float(r.split(",")[header.index("rollout/worker_failures")]) for r in rows[1:]]
    assert failures[0] == 0 and failures[-1] == 1 and len(rows) == 4


def test_a_run_whose_only_worker_dies_says_why_and_resumes(tmp_path, monkeypatch, capsys):
    """Its one local worker killed after the first iteration: exit 5, a warning that says why
    in full, and the way on that works (`--resume` starts the workers anew)."""
    kill_worker_after_the_first_iteration(monkeypatch, 0)
    args = ["--iterations", "2", "--rollout-workers", "1", "--set", "checkpoint_every=1"]
    assert selfplay(tmp_path, "lost", *args, "--set", "rollout.worker_threads=1") == 5
    said = " ".join(capsys.readouterr().err.split())
    assert "stopped answering (no answer after" in said and "Connection refused)." in said
    assert "Restart them" not in said
    folder = tmp_path / "lost"
    assert f"continue with `selfplay run --resume {folder}`" in said
    assert main(["run", "--resume", str(folder)]) == 0  # the advice works
    assert len((folder / "metrics.csv").read_text().splitlines()) == 3


def test_a_server_lost_during_a_weight_push_is_named_with_the_reason_in_full():
    from types import SimpleNamespace

    from selfplay.core.models.served.policy import Unreachable
    from selfplay.core.serving.weight_sync import WeightSync

    advice = "The served model ...: no answer after 4 attempt(s) (last: refused). Check " * 5
    lost = Unreachable(advice, brief="no answer after 4 attempt(s); last: Connection refused")
    said = WeightSync._failed(
        SimpleNamespace(published=3), SimpleNamespace(url="http://w/v1"), lost
    )
    assert said.startswith("rollout server http://w/v1 did not take the weights of version 3 ")
    assert "(no answer after 4 attempt(s); last: Connection refused)." in said
    assert "a resume starts the run's local workers anew." in said and advice not in said


def _workers_of(folder: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "--rollout-worker" in line and str(folder) in line:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_a_trainer_killed_with_sigkill_leaves_no_worker_behind(tmp_path):
    folder = tmp_path / "killed"
    command = [sys.executable, "-m", "selfplay.core.commands.cli", "run", "--iterations", "500"]
    command += [*SMALL, "--rollout-workers", "1", "--out", str(tmp_path), "--name", "killed"]
    env = {**os.environ, "SELFPLAY_LOAD_PLUGINS": ""}
    trainer = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 240
    while time.time() < deadline and not (folder / "metrics.csv").exists():
        time.sleep(0.5)
    workers = _workers_of(folder)
    assert workers, "the run started no worker"
    trainer.send_signal(signal.SIGKILL)
    trainer.wait()
    deadline = time.time() + 30
    while time.time() < deadline and _workers_of(folder):
        time.sleep(0.2)
    assert not _workers_of(folder), "a rollout worker outlived its trainer"


TWO_LEARNERS = ["--learner", "a", "--learner", "b", "--set", "learners.a.roles=[player_0]",
                "--set", "learners.b.roles=[player_1]"]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--set", "rollout.max_staleness=1"], "rollout.max_staleness=1: without rollout workers"),
        (["--set", "rollout.queue=2", "--set", "rollout.stale=drop"], "rollout.stale=drop:"),
        ([*TWO_LEARNERS, "--set", "learners.a.max_staleness=1"], "learners.a.max_staleness=1:"),
        (["--set", "rollout.pin=false"], "rollout.pin=false: without rollout workers"),
        (
            [
                "--set",
                "rollout.servers=openai:http://127.0.0.1:9/v1#x",
                "--set",
                "rollout.worker_threads=2",
            ],
            "rollout.worker_threads=2: it sets the local rollout workers, and the run starts none",
        ),
    ],
)
def test_a_setting_only_served_rollouts_read_is_refused_where_it_would_be_ignored(
    tmp_path, capsys, monkeypatch, args, said
):
    def launched(*_: object) -> None:
        raise AssertionError("refused only after the training processes were built")

    monkeypatch.setattr(trainer, "build_fabric", launched)
    assert selfplay(tmp_path, "x", *args) == 2
    assert said in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "x").exists()


REWEIGHT = ["--set", "rollout.stale=reweight"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--set", "objective=dpo", "--set", "rollout.max_staleness=1", *REWEIGHT],
            "takes no age weights",
        ),
        (["--lora", "--set", "lora.per_role=true"], "one adapter per role"),
        (["--devices", "2", "--strategy", "ddp"], "several training processes"),
        (["--set", "rollout.servers=openai:http://127.0.0.1:9/v1#x"], "not both"),
    ],
)
def test_what_served_rollouts_do_not_support_is_refused_before_any_work(
    tmp_path, capsys, monkeypatch, args, said
):
    def launched(*_: object) -> None:  # Fabric starts the other processes: too late to refuse
        raise AssertionError("refused only after the training processes were built")

    monkeypatch.setattr(trainer, "build_fabric", launched)
    assert selfplay(tmp_path, "x", "--rollout-workers", "1", *args) == 2
    assert said in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "x").exists()
