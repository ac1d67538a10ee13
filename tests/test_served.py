"""Served models (openai:URL#MODEL) against a real `selfplay serve` over a tiny checkpoint
and vLLM's dynamic-LoRA endpoints; no network beyond localhost."""

from __future__ import annotations

import json
import random
import threading
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import os
import subprocess
import sys

import pytest

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Request
from selfplay.api.reward import RewardContext
from selfplay.api.sampler import Pool
from selfplay.api.types import Episode, Message, Turn
from selfplay.core.commands.play import load_checkpoint_policy
from selfplay.core.commands.serve import Server, build_service, stopped_by_signal
from selfplay.core.league.seating import Seats
from selfplay.core.models.lora import adapter_state_dict, apply_lora
from selfplay.core.models.reward_models import RewardModels
from selfplay.core.models.served.policy import (
    ServedError,
    ServedPolicy,
    load_adapter,
    unload_adapter,
)
from selfplay.core.plan.build import build_learner, build_sampler
from selfplay.core.plan.checks import check_players
from selfplay.core.plan.config_loader import build_config
from selfplay.core.rollout import play
from selfplay.core.run.folder import checkpoint
from selfplay.core.run.folder.run_folder import config_text
from selfplay.core.serving.server import ChatService, create_app
from selfplay.games.tictactoe import TicTacToe
from selfplay.rewards.judge import Judge

ASK = (Message("system", "You play tic-tac-toe."), Message("user", "Board 012|345|678. Move?"))
NAME = "tiny-lora"


def requests(n: int, seed: int = 0) -> list[Request]:
    game = TicTacToe()
    state = game.reset(seed)
    return [Request(game, state, "player_0", ASK, random.Random(seed + i)) for i in range(n)]


def noisy_adapters(model, seed: int) -> dict[str, torch.Tensor]:
    """The model's adapter tensors, filled with noise so that they change its answers."""
    g = torch.Generator().manual_seed(seed)
    return {
        k: torch.randn(v.shape, generator=g) * 0.5 for k, v in adapter_state_dict(model).items()
    }


def lora_run(root: Path, name: str, *overrides: str) -> SimpleNamespace:
    """A LoRA run folder with one checkpoint (its adapters set, not trained), built directly."""
    config = build_config(
        flags={"game": "tictactoe", "model": "tiny", "out": str(root), "name": name},
        overrides=["lora.enabled=true", "lora.rank=2", "generation.max_new_tokens=6", *overrides],
    )
    folder = root / name
    folder.mkdir()
    (folder / "config.yaml").write_text(config_text(config))
    model = apply_lora(build_learner(config).model, config.lora, TicTacToe.roles)
    state = {"adapters": noisy_adapters(model, seed=1)}
    fabric = SimpleNamespace(
        global_rank=0, barrier=lambda: None, save=lambda path, state: torch.save(state, path)
    )
    found = checkpoint.save(fabric, folder, 1, state, {})
    other = root / f"{name}-snapshot.pt"  # a pool snapshot of the same run, elsewhere
    torch.save(noisy_adapters(model, seed=2), other)
    return SimpleNamespace(folder=folder, checkpoint=found, config=config, other=other)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> SimpleNamespace:
    return lora_run(tmp_path_factory.mktemp("served"), NAME)


@pytest.fixture(scope="module")
def server(run):
    service, label = build_service(run.folder)
    service.batcher.wait = 0.05  # gather concurrent requests surely, even on a loaded machine
    server = Server(create_app(service)).start()
    yield SimpleNamespace(url=server.url, service=service, label=label)
    server.stop()
    service.batcher.close()


def local_greedy(run, adapters=None, tokens: int = 6) -> str:
    policy = load_checkpoint_policy(run.folder).policy
    if adapters is not None:
        from selfplay.core.models.lora import load_adapter_state_dict

        load_adapter_state_dict(policy.model, adapters)
    policy.max_new_tokens = tokens
    return policy.act(requests(1), greedy=True)[0].text


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_serve_answers_as_the_checkpoint_does(run, server):
    listed = [row["id"] for row in get(f"{server.url}/models")["data"]]
    assert listed == [NAME] and str(run.checkpoint) in server.label
    served = ServedPolicy(f"openai:{server.url}#{NAME}", max_new_tokens=6)
    text = served.act(requests(1), greedy=True)[0].text
    assert text == local_greedy(run)
    assert text != local_greedy(run, adapters=noisy_adapters(load_checkpoint_policy(
        run.folder).policy.model, seed=2))  # the checkpoint's adapters matter  # fmt: skip


def test_a_seed_makes_a_sample_repeatable(server):
    served = ServedPolicy(f"openai:{server.url}#{NAME}", max_new_tokens=6)
    again = [served.act(requests(1, seed=7))[0].text for _ in range(2)]
    others = {served.act(requests(1, seed=s))[0].text for s in range(8, 12)}
    assert again[0] == again[1] and len(others | {again[0]}) > 1


def test_per_role_adapters_are_served_by_role(tmp_path):
    run = lora_run(tmp_path, "roles", "lora.per_role=true")
    service, _ = build_service(run.folder, name="duo")
    server = Server(create_app(service)).start()
    try:
        listed = [row["id"] for row in get(f"{server.url}/models")["data"]]
        assert listed == ["duo", "duo:player_0", "duo:player_1"]
        local = load_checkpoint_policy(run.folder).policy
        local.max_new_tokens = 6
        texts = set()
        for role in ("player_0", "player_1"):
            served = ServedPolicy(f"openai:{server.url}#duo:{role}", max_new_tokens=6)
            asked = [Request(r.game, r.state, role, r.messages, r.rng) for r in requests(1)]
            mine = [Request(r.game, r.state, role, r.messages, r.rng) for r in requests(1)]
            text = served.act(asked, greedy=True)[0].text
            assert text == local.act(mine, greedy=True)[0].text
            texts.add(text)
        assert len(texts) == 2  # each role its own adapter
    finally:
        server.stop()
        service.batcher.close()


def test_concurrent_requests_are_batched(server):
    served = ServedPolicy(f"openai:{server.url}?concurrency=4#{NAME}", max_new_tokens=3)
    before = len(server.service.batcher.batches)
    out = served.act(requests(4))
    assert len(out) == 4 and all(isinstance(c.text, str) for c in out)
    assert max(server.service.batcher.batches[before:]) > 1  # answered in fewer calls


def test_a_fixed_opponent_plays_through_the_server(run, server):
    spec = f"openai:{server.url}#{NAME}"
    config = run.config.model_copy(update={"opponent": f"fixed:{spec}"})
    sampler = build_sampler(config, TicTacToe())
    learner = build_learner(run.config)
    holder = sampler.sample([], random.Random(0))
    assert holder == spec
    seats = Seats(learner, TicTacToe())
    opponent = seats.policy(holder)
    assert isinstance(opponent, ServedPolicy) and opponent.max_new_tokens == 6
    asked = sum(server.service.batcher.batches)
    episode = play(TicTacToe(), [{"player_0": opponent, "player_1": learner}], [3])[0]
    assert episode.seats["player_0"] == spec  # moves first, so it surely plays
    served_turns = [t for t in episode.turns if t.role == "player_0"]
    assert served_turns and sum(server.service.batcher.batches) - asked >= len(served_turns)
    assert all(t.logprobs in (None, ()) for t in served_turns)


def test_pool_members_may_be_served(run, server):
    spec = f"openai:{server.url}#{NAME}"
    assert Pool(size=2, scripted=[spec, "random"]).members == [spec, "scripted:random"]
    config = build_config(
        flags={"game": "tictactoe", "model": "tiny"}, overrides=[f"pool.scripted=[{spec}]"]
    )
    assert config.pool.scripted == [spec]
    check_players(config, TicTacToe())  # a served member is no scripted player to look up


def test_a_judge_through_openai(run, server):
    spec = f"openai:{server.url}#{NAME}"
    judge = Judge(model=spec, prefill="Score:")
    learner = build_learner(run.config)
    models = RewardModels(run.config, learner)
    judge.bind(RewardContext(game=TicTacToe(), policy=models, measure=models.measure))
    turns = tuple(
        Turn(role, "learner", ASK, text, None, True, None, (1,))
        for role, text in (("player_0", "[4]"), ("player_1", "[0]"))
    )
    asked = sum(server.service.batcher.batches)
    scores = judge([Episode("tictactoe", 0, {}, turns, {})])
    assert len(scores) == 1 and sum(server.service.batcher.batches) == asked + 1
    assert isinstance(models(spec), ServedPolicy)


def test_load_and_play_an_adapter_then_unload_it(run, server):
    served = ServedPolicy(f"openai:{server.url}?lora={run.other}#snap-2", max_new_tokens=6)
    text = served.act(requests(1), greedy=True)[0].text  # loads the adapter first
    assert text == local_greedy(run, adapters=torch.load(run.other, weights_only=True))
    assert text != local_greedy(run)
    listed = {row["id"]: row["parent"] for row in get(f"{server.url}/models")["data"]}
    assert listed == {NAME: None, "snap-2": NAME}
    load_adapter(served, "snap-2", str(run.other))  # again: already loaded is fine
    unload_adapter(served, "snap-2")
    with pytest.raises(ServedError, match=r"404.*'snap-2' does not exist.*/models lists"):
        served.act(requests(1), greedy=True)
    with pytest.raises(ServedError, match="not loaded"):
        unload_adapter(served, "snap-2")


def test_a_peft_adapter_folder_loads_by_name(run, server, tmp_path):
    """The folder peft's save_pretrained writes (what `selfplay export` ships) loads too."""
    from selfplay.core.models.lora import load_adapter_state_dict

    policy = load_checkpoint_policy(run.folder).policy
    adapters = torch.load(run.other, weights_only=True)
    load_adapter_state_dict(policy.model, adapters)
    policy.model.save_pretrained(tmp_path / "peft")
    served = ServedPolicy(f"openai:{server.url}?lora={tmp_path / 'peft'}#peft", max_new_tokens=6)
    try:
        assert served.act(requests(1), greedy=True)[0].text == local_greedy(run, adapters)
    finally:
        unload_adapter(served, "peft")


def test_bad_adapters_are_refused_with_the_reason(run, server, tmp_path):
    served = ServedPolicy(f"openai:{server.url}#{NAME}")
    with pytest.raises(ServedError, match=r"No adapter at .*nowhere"):
        load_adapter(served, "x", str(tmp_path / "nowhere"))
    small = {k: v[..., :1] for k, v in torch.load(run.other, weights_only=True).items()}
    torch.save(small, tmp_path / "small.pt")
    with pytest.raises(ServedError, match="does not fit this model"):
        load_adapter(served, "y", str(tmp_path / "small.pt"))


def test_a_full_weight_server_takes_no_adapters(run):
    policy = build_learner(run.config.model_copy(update={"lora": run.config.lora.model_copy(
        update={"enabled": False})}))  # fmt: skip
    service = ChatService(policy, "plain")
    server = Server(create_app(service)).start()
    try:
        served = ServedPolicy(f"openai:{server.url}?lora={run.other}#snap")
        with pytest.raises(ServedError, match=r"full-weight checkpoint.*--lora"):
            served.act(requests(1))
        body = json.dumps({"messages": [], "model": "plain"}).encode()
        call = urllib.request.Request(f"{server.url}/chat/completions", data=body, method="POST")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(call, timeout=10)
        assert err.value.code == 400 and "messages" in json.loads(err.value.read())["error"][
            "message"]  # fmt: skip
    finally:
        server.stop()
        service.batcher.close()


def test_a_served_model_is_never_the_learner_nor_scored(run):
    spec = "openai:http://127.0.0.1:1/v1#m"
    with pytest.raises(ConfigError, match=r"cannot be the learner.*log-probabilities"):
        build_learner(run.config.model_copy(update={"model": spec}))
    served = ServedPolicy(spec)
    assert getattr(served, "tokenizer", None) is None and not hasattr(served, "model")
    with pytest.raises(AttributeError, match="cannot be the learner or be scored"):
        served.model  # noqa: B018
    assert RewardModels(run.config, build_learner(run.config)).measure(spec, ASK) is None


def test_the_server_answers_concurrent_clients_from_threads(server):
    served = ServedPolicy(f"openai:{server.url}#{NAME}", max_new_tokens=2)
    results, errors = [], []

    def ask():
        try:
            results.extend(served.act(requests(2)))
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and len(results) == 6


def test_serve_refuses_a_folder_that_is_no_run(tmp_path):
    with pytest.raises(ConfigError, match="neither a run folder"):
        build_service(Path(tmp_path))


@pytest.mark.slow
def test_selfplay_serve_on_the_command_line(run):
    """The command as a user starts it: it prints its URL, answers, and stops on SIGINT."""
    import signal
    import time

    script = "import sys; from selfplay.core.commands.cli import main; sys.exit(main())"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SELFPLAY_LOAD_PLUGINS": ""}
    process = subprocess.Popen(
        [sys.executable, "-c", script, "serve", str(run.folder), "--port", "0", "--name", "cli"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    try:
        lines = []
        deadline = time.time() + 120
        while time.time() < deadline and not any("Ctrl-C" in line for line in lines):
            lines.append(process.stdout.readline())
        url = next(line.split("API at ")[1].split()[0] for line in lines if "API at " in line)
        assert "as model 'cli'" in lines[0]
        served = ServedPolicy(f"openai:{url}#cli?retries=20&backoff=0.1", max_new_tokens=6)
        assert served.act(requests(1), greedy=True)[0].text == local_greedy(run)
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130  # the documented exit code of an interrupt


def test_serve_stopped_by_a_signal_exits_128_plus_it():
    def stopped(*signals, should_exit=True):
        inner = SimpleNamespace(_captured_signals=list(signals), should_exit=should_exit)
        return SimpleNamespace(server=inner)

    assert stopped_by_signal(stopped(2)) == 130
    assert stopped_by_signal(stopped(15)) == 143
    assert stopped_by_signal(stopped(should_exit=False)) == 0
