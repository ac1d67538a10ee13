"""A LoRA run's pool snapshots played by a server (`pool.server`): each snapshot is loaded there
as an adapter through vLLM's dynamic-LoRA protocol and unloaded when the pool evicts it; the
server is an in-process `selfplay serve` over the run's base model. No network beyond localhost.
"""

from __future__ import annotations

import json
import random
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Request
from selfplay.api.types import Message
from selfplay.core.commands.serve import Server
from selfplay.core.league.snapshots import SnapshotStore
from selfplay.core.models.lora import adapter_state_dict, apply_lora, load_adapter_state_dict
from selfplay.core.models.served.policy import ServedError, ServedPolicy
from selfplay.core.plan.build import build_learner
from selfplay.core.plan.checks import check_players
from selfplay.core.plan.config_loader import build_config
from selfplay.core.run.trainer import train
from selfplay.core.serving.server import ChatService, create_app
from selfplay.games.tictactoe import TicTacToe

SETTINGS = [
    "game=tictactoe", "model=tiny", "name=run", "seed=3", "matches=4", "iterations=2",
    "cold_start.steps=0", "eval.matches=2", "generation.max_new_tokens=6",
    "train.minibatch_size=16", "train.lr=0.05", "lora.enabled=true", "lora.rank=2",
    "pool.snapshot_every=1", "pool.size=2", "opponent=pool:0",  # every opponent a member
]  # fmt: skip
BOARDS = ["012|345|678", "x12|345|678", "x1o|345|678", "012|3x5|678"]


def config_for(tmp_path: Path, *more: str):
    return build_config(None, {}, [*SETTINGS, f"out={tmp_path}", *more])


def prompts() -> list[Request]:
    game = TicTacToe()
    return [
        Request(game, game.reset(0), "player_0", asked, random.Random(0))
        for board in BOARDS
        for asked in [(Message("user", f"Board {board}. Your move?"),)]
    ]


def texts(policy) -> list[str]:
    return [c.text for c in policy.act(prompts(), greedy=True)]


@pytest.fixture
def server(tmp_path):
    """`selfplay serve`'s service over the run's base model, recording what it was asked."""
    config = config_for(tmp_path)
    policy = build_learner(config)
    policy.model = apply_lora(policy.model, config.lora, TicTacToe.roles)
    service = ChatService(policy, "base", lora=True)
    seen = SimpleNamespace(loads=[], unloads=[], asked=[])
    load, unload, answer = service.adapters.load, service.adapters.unload, service.batcher.answer

    def loading(name, path):
        load(name, path)
        seen.loads.append((name, path))

    def unloading(name):
        unload(name)
        seen.unloads.append(name)

    def answering(key, requests):
        seen.asked.append((key[1], len(requests)))
        return answer(key, requests)

    service.adapters.load, service.adapters.unload = loading, unloading
    service.batcher.answer = answering
    running = Server(create_app(service)).start()
    yield SimpleNamespace(url=running.url, service=service, policy=policy, seen=seen)
    running.stop()
    service.batcher.close()


def test_pool_snapshots_are_served_as_adapters_and_unloaded_when_evicted(tmp_path, server):
    result = train(config_for(tmp_path, f"pool.server=openai:{server.url}?retries=0"))
    pool = result.folder.path / "pool"
    names = ["run-snapshot-0", "run-snapshot-1", "run-snapshot-2"]
    assert [name for name, _ in server.seen.loads] == names  # each loaded once, as it was taken
    assert server.seen.loads[0][1] == str((pool / "snapshot-0").resolve())
    # the size-2 pool evicted snapshot 1 when 2 came; gone from the server and the folder
    assert server.seen.unloads == ["run-snapshot-1"]
    assert sorted(server.service.adapters.states) == ["run-snapshot-0", "run-snapshot-2"]
    assert sorted(p.name for p in pool.iterdir()) == [
        "snapshot-0", "snapshot-0.pt", "snapshot-2", "snapshot-2.pt"
    ]  # fmt: skip
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {
        p.name for p in (pool / "snapshot-2").iterdir()
    }
    # every opponent was a member, and every move of a member was asked of the server
    episodes = [json.loads(line) for line in (result.folder.path / "episodes.jsonl").open()]
    held = {holder for e in episodes for holder in e["seats"].values()} - {"learner"}
    assert held == {"snapshot:0", "snapshot:1"}
    moved = [t["seat"] for e in episodes for t in e["turns"] if t["seat"] != "learner"]
    by_adapter: dict[str, int] = {}
    for adapter, n in server.seen.asked:
        by_adapter[adapter] = by_adapter.get(adapter, 0) + n
    assert moved and by_adapter == {
        f"run-{h.replace(':', '-')}": moved.count(h) for h in set(moved)
    }

    memory = SnapshotStore(pool, server.policy, lora=True, write=False)("snapshot:2")
    remote = ServedPolicy(f"openai:{server.url}#run-snapshot-2", max_new_tokens=6)
    assert texts(remote) == texts(memory)


def test_a_served_snapshot_answers_exactly_as_in_memory(tmp_path, server):
    """The adapter's round trip (tensors, PEFT folder, server) is exact; noisy adapters make
    the answers differ from the base's, which a run this short would not."""
    from safetensors.torch import load_file

    config = config_for(tmp_path)
    learner = build_learner(config)
    learner.model = apply_lora(learner.model, config.lora, TicTacToe.roles)
    g = torch.Generator().manual_seed(5)
    noisy = {k: torch.randn(v.shape, generator=g) * 0.5 for k, v in adapter_state_dict(
        learner.model).items()}  # fmt: skip
    load_adapter_state_dict(learner.model, noisy)
    pool = tmp_path / "exact" / "pool"
    store = SnapshotStore(pool, learner, lora=True, server=f"openai:{server.url}?retries=0")
    store.save("snapshot:5")
    folder = load_file(pool / "snapshot-5" / "adapter_model.safetensors")
    assert {f"default/{k}": v for k, v in folder.items()}.keys() == noisy.keys()
    assert all(torch.equal(folder[k.removeprefix("default/")], v) for k, v in noisy.items())
    served, memory = store("snapshot:5"), SnapshotStore(pool, learner, True, False)("snapshot:5")
    assert isinstance(served, ServedPolicy) and served.name == "snapshot:5"
    base = ServedPolicy(f"openai:{server.url}#base", max_new_tokens=6)
    assert texts(served) == texts(memory) != texts(base)
    store.delete("snapshot:5")
    assert server.seen.unloads == ["exact-snapshot-5"] and not server.service.adapters.states
    assert sorted(p.name for p in pool.iterdir()) == []


def test_an_unreachable_pool_server_is_named(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(ServedError, match=rf"no answer from {url}/unload_lora_adapter.*curl"):
        train(config_for(tmp_path, f"pool.server=openai:{url}?retries=0"))


@pytest.mark.parametrize(
    ("more", "why"),
    [
        (["lora.enabled=false"], r"needs a LoRA run \(--lora\).*weights synced"),
        (["lora.per_role=true"], "one served name per role"),
        (["pool.server=openai:http://h:1/v1#base"], "names the server only"),
        (["pool.server=http://h:1/v1"], "write openai:http://HOST:PORT/v1"),
    ],
)
def test_pool_server_settings_are_refused_before_any_work(tmp_path, more, why):
    config = config_for(tmp_path, "pool.server=openai:http://h:1/v1", *more)
    with pytest.raises(ConfigError, match=why):
        check_players(config, TicTacToe())
