"""Any served model on every suite: a run served by `selfplay serve` and measured through
``--model openai:URL#MODEL`` gives the figures of the run folder measured directly, match for
match; its Kuhn table is read from the server's log-probabilities (``echo``)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from selfplay.core.commands.cli import main
from selfplay.core.commands.play import load_checkpoint_policy
from selfplay.core.commands.serve import Server, build_service
from selfplay.core.commands.suites import HostBench
from selfplay.core.models.policy_table import policy_table
from selfplay.core.models.served.policy import ServedPolicy
from selfplay.core.models.served.table import served_table
from selfplay.core.plan.config_loader import build_config
from selfplay.core.run.trainer import train
from selfplay.core.serving.server import create_app
from tests.test_served_rollouts import post  # the JSON request and its status

NAME = "served-eval"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A short tic-tac-toe run (its cold start makes most moves legal), served."""
    root = tmp_path_factory.mktemp("served-eval")
    flags = {"iterations": 1, "matches": 8, "out": root, "name": NAME, "seed": 5}
    train(build_config(None, flags, ["cold_start.steps=60", "eval.matches=2", "threads=1"]))
    folder = root / NAME
    service, _ = build_service(folder)
    service.batcher.wait = 0.02
    server = Server(create_app(service)).start()
    yield SimpleNamespace(folder=folder, url=server.url, service=service)
    server.stop()
    service.batcher.close()


def spec(served) -> str:
    return f"openai:{served.url}#{NAME}"


def test_the_served_run_plays_every_match_as_the_run_folder_does(served):
    local = load_checkpoint_policy(served.folder)
    config = local.config
    direct = HostBench(local.policy, config=config)
    remote = HostBench(ServedPolicy(spec(served), max_new_tokens=None), config=config)
    for name, opponent in (("tictactoe", "minimax"), ("kuhn-poker", "nash")):
        here = direct.matches(direct.game(name), opponent, 12, 0)
        there = remote.matches(remote.game(name), opponent, 12, 0)
        assert [(r, e.outcome, [t.text for t in e.turns]) for r, e in here] == [
            (r, e.outcome, [t.text for t in e.turns]) for r, e in there
        ]
    legal = sum(t.valid for _, e in here for t in e.turns)
    assert legal > 0  # not a record of forfeits only


def test_the_served_table_is_the_in_memory_one(served):
    local = load_checkpoint_policy(served.folder)
    game = HostBench(local.policy, config=local.config).game("kuhn-poker")
    mine = policy_table(local.policy, game, 1.0)
    theirs = served_table(ServedPolicy(spec(served)), game, 1.0)
    assert mine.keys() == theirs.keys()
    for key in mine:
        for action, p in mine[key].items():
            assert theirs[key][action] == pytest.approx(p, abs=1e-5)
    assert game.exploitability(theirs) == pytest.approx(game.exploitability(mine), abs=1e-5)


def test_eval_suite_through_the_endpoint_gives_the_run_folders_figures(served, capsys):
    args = ["eval", "--suite", "solver", "--seeds", "0", "1", "--matches", "6", "--json"]
    assert main([*args, str(served.folder)]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main([*args, str(served.folder), "--model", spec(served)]) == 0
    remote = json.loads(capsys.readouterr().out)
    assert remote["measured"] == f"model {spec(served)}"
    assert direct["figures"].keys() == remote["figures"].keys()
    for name, figure in direct["figures"].items():
        other = remote["figures"][name]
        if name == "kuhn-poker/exploitability":  # summed log-probabilities: float rounding
            assert other["mean"] == pytest.approx(figure["mean"], abs=1e-5)
        else:
            assert other["values"] == figure["values"], name


def test_echo_scores_the_prompt_as_the_model_does(served):
    local = load_checkpoint_policy(served.folder).policy
    ids = local.encode([_request("Board 012|345|678. You are x.")])[0]
    status, reply = post(
        served.url, "completions", {"prompt": ids, "echo": True, "logprobs": 0, "max_tokens": 0}
    )
    assert status == 200, reply
    logps = reply["choices"][0]["logprobs"]["token_logprobs"]
    assert logps[0] is None and len(logps) == len(ids)
    from selfplay.core.models.scoring import score

    mine = score(local.model, [ids[:1]], [ids[1:]], local.pad_id, 1.0, False).logp[0].tolist()
    assert logps[1:] == pytest.approx(mine, abs=1e-5)
    assert reply["choices"][0]["text"]  # the prompt's text, echoed


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"prompt": [1, 2], "max_tokens": 0}, "max_tokens=0 asks for nothing"),
        ({"messages": []}, "messages is empty"),
        (
            {"messages": [{"role": "assistant", "content": "[4]"}]},
            "close it (add_generation_prompt=false)",
        ),
        ({"prompt": "x", "messages": [{"role": "user", "content": "x"}]}, "as prompt, or a chat"),
    ],
)
def test_what_the_server_cannot_score_is_refused_saying_why(served, body, said):
    route = "completions" if "max_tokens" in body else "tokenize"
    url = served.url if route == "completions" else served.url.removesuffix("/v1")
    status, reply = post(url, route, body)
    assert status == 400 and said in reply["error"]["message"], reply


def test_a_closed_turn_is_the_reply_then_the_end_of_sequence(served):
    local = load_checkpoint_policy(served.folder).policy
    chat = [{"role": "user", "content": "x1o|345|678 x"}]
    root = served.url.removesuffix("/v1")
    _, open_turn = post(root, "tokenize", {"messages": chat})
    _, closed = post(
        root,
        "tokenize",
        {
            "messages": [*chat, {"role": "assistant", "content": "[4]"}],
            "add_generation_prompt": False,
        },
    )
    answer = local.tokenizer("[4]", add_special_tokens=False)["input_ids"]
    from selfplay.core.models.scoring import eos_id

    assert closed["tokens"] == [*open_turn["tokens"], *answer, eos_id(local)]


def test_a_server_without_tokenize_leaves_exploitability_out_with_a_note(served, monkeypatch):
    from selfplay.core.models.served import table as module

    def refuse(policy, messages, turn="close"):
        from selfplay.core.models.served.policy import ServedError

        raise ServedError("http://host/tokenize refused the request (HTTP 404: Not Found).")

    monkeypatch.setattr(module, "_tokenize", refuse)
    bench = HostBench(ServedPolicy(spec(served), max_new_tokens=None))
    assert bench.table(bench.game("kuhn-poker")) is None
    assert any("no exploitability" in note and "404" in note for note in bench.notes)


def _request(text: str):
    import random

    from selfplay.api.policy import Request
    from selfplay.api.types import Message

    return Request(None, None, "player_0", (Message("user", text),), random.Random(0))  # type: ignore[arg-type]


def test_a_run_folder_goes_with_model_only_when_served(served, capsys):
    assert main(["eval", "--suite", "solver", str(served.folder), "--model", "tiny"]) == 2
    assert "its served copy" in " ".join(capsys.readouterr().err.split())
