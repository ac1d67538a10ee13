"""A served model's failures: a stub server that fails or stalls, a closed port, bad names;
no network beyond localhost."""

from __future__ import annotations

import random
import socket

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Request
from selfplay.api.types import Message
from selfplay.core.commands.serve import Server
from selfplay.core.models.served.policy import ServedError, ServedPolicy
from selfplay.core.plan.checks import check_players
from selfplay.core.plan.config_loader import build_config
from selfplay.games.tictactoe import TicTacToe


def one_request() -> list[Request]:
    game = TicTacToe()
    ask = (Message("user", "Board 012|345|678. Your move?"),)
    return [Request(game, game.reset(0), "player_0", ask, random.Random(0))]


# ---- failures: a stub server, a closed port, bad names ---------------------------------------


class Flaky:
    """A chat server that answers 503 ``fail`` times, then a fixed reply; counts its calls."""

    def __init__(self, fail: int, delay: float = 0.0) -> None:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        self.fail, self.delay, self.calls = fail, delay, 0

        async def chat(request):
            import asyncio

            self.calls += 1
            await asyncio.sleep(self.delay)
            if self.calls <= self.fail:
                return JSONResponse({"error": {"message": "warming up"}}, status_code=503)
            return JSONResponse({"choices": [{"message": {"content": "[4]"}}]})

        self.app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.fixture
def flaky():
    made = []

    def start(fail: int, delay: float = 0.0):
        stub = Flaky(fail, delay)
        server = Server(stub.app).start()
        made.append(server)
        return stub, server.url

    yield start
    for server in made:
        server.stop()


def test_retries_with_backoff_until_the_server_answers(flaky):
    stub, url = flaky(fail=2)
    served = ServedPolicy(f"openai:{url}?retries=2&backoff=0.01#m")
    assert served.act(one_request())[0].text == "[4]" and stub.calls == 3
    stub, url = flaky(fail=5)
    served = ServedPolicy(f"openai:{url}?retries=1&backoff=0.01#m")
    with pytest.raises(ServedError, match=r"after 2 attempt\(s\) \(last: HTTP 503: warming up\)"):
        served.act(one_request())
    assert stub.calls == 2


def test_a_slow_server_times_out_by_the_option(flaky):
    _, url = flaky(fail=0, delay=0.4)
    served = ServedPolicy(f"openai:{url}?timeout=0.1&retries=0#m")
    with pytest.raises(ServedError, match=r"no answer from .*timed out.*\?timeout=SECONDS"):
        served.act(one_request())


def test_an_unreachable_server_is_named():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    served = ServedPolicy(f"openai:{url}?retries=1&backoff=0#m")
    with pytest.raises(ServedError) as err:
        served.act(one_request())
    message = str(err.value)
    assert f"{url}/chat/completions" in message and f"curl {url}/models" in message
    assert "refused" in message.lower()


def test_options_may_follow_the_model_name():
    served = ServedPolicy("openai:http://h:1/v1?timeout=5#Org/Name?retries=0&concurrency=2")
    spec = served.spec
    assert (spec.model, spec.timeout, spec.retries, spec.concurrency) == ("Org/Name", 5, 0, 2)
    assert spec.url("chat/completions") == "http://h:1/v1/chat/completions"


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("openai:localhost:8000/v1#m", "not an http"),
        ("openai:http://h:1/v1?timeout=soon#m", "timeout='soon' is not a float"),
        ("openai:http://h:1/v1?retries=-1#m", "retries must be at least 0"),
        ("openai:http://h:1/v1?lora=/a", "lora= needs the name"),
        (
            "openai:http://h:1/v1?timeout=5",
            r"names no model: write openai:http://h:1/v1\?timeout=5#MODEL, MODEL being a name "
            r"the server lists \(curl http://h:1/v1/models\)",
        ),
        ("openai:http://h:1/v1#", "names no model"),
    ],
)
def test_bad_served_names_are_explained(spec, why):
    with pytest.raises(ConfigError, match=why):
        ServedPolicy(spec)


def test_served_names_are_checked_before_any_work():
    config = build_config(
        flags={"game": "tictactoe", "model": "tiny", "opponent": "fixed:openai:gpu-box:8000#m"}
    )
    with pytest.raises(ConfigError, match=r"--opponent 'openai:gpu-box:8000#m'.*not an http"):
        check_players(config, TicTacToe())
    config = build_config(
        flags={"game": "tictactoe", "model": "tiny"},
        overrides=["reward_options.judge.model=openai:http://h:1/v1?retries=x#j"],
    )
    with pytest.raises(ConfigError, match=r"reward_options.judge.model .*retries='x'"):
        check_players(config, TicTacToe())


@pytest.mark.parametrize(
    "setting",
    [
        "opponent=fixed:openai:http://h:1/v1",
        "pool.scripted=[openai:http://h:1/v1]",
        "rollout.servers=openai:http://h:1/v1",
    ],
)
def test_a_served_model_without_its_name_is_refused_before_any_work(setting, tmp_path, capsys):
    from selfplay.core.commands.cli import main

    args = ["run", "--iterations", "1", "--out", str(tmp_path), "--name", "x", "--set", setting]
    assert main(args) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "'openai:http://h:1/v1' names no model: write openai:http://h:1/v1#MODEL" in said
    assert not (tmp_path / "x").exists()


# ---- the address a failure names: the API root the user gave, and the next step ------------


class Lists:
    """A server that lists one model and answers 404 to any other name, as vLLM does."""

    def __init__(self, name: str) -> None:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def models(request):
            return JSONResponse({"data": [{"id": name, "owned_by": "vllm"}]})

        async def chat(request):
            asked = (await request.json())["model"]
            message = f"The model `{asked}` does not exist."
            return JSONResponse({"error": {"message": message}}, status_code=404)

        self.app = Starlette(
            routes=[
                Route("/v1/models", models),
                Route("/v1/chat/completions", chat, methods=["POST"]),
            ]
        )


def test_a_dead_server_is_named_by_the_api_root_given_also_for_its_root_routes():
    """A policy table asks /tokenize at the server's root: the message still names the model
    as given, keeps its options, and says to curl the API root's /models."""
    from selfplay.core.models.served.table import served_table
    from selfplay.games.kuhn_poker import KuhnPoker

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    given = f"openai:{url}?retries=0#m"
    with pytest.raises(ServedError) as err:
        served_table(ServedPolicy(given), KuhnPoker())
    message = " ".join(str(err.value).split())
    assert f"The served model {given}: no answer from http://127.0.0.1:{port}/tokenize" in message
    assert "after 1 attempt(s)" in message and f"(curl {url}/models)" in message


def test_a_wrong_model_name_is_named_with_what_the_server_lists():
    server = Server(Lists("oom").app).start()
    try:
        served = ServedPolicy(f"openai:{server.url}?retries=0#wrong")
        with pytest.raises(ServedError) as err:
            served.act(one_request())
        said = str(err.value)
        assert f"Is the model 'wrong' served there? curl {server.url}/models" in said
        assert "API root" not in said  # the URL given ends in /v1: it is the API root
        with pytest.raises(ServedError, match=r"/v1/models lists oom, not 'wrong'; name one"):
            served.check_model()
        ServedPolicy(f"openai:{server.url}#oom").check_model()
    finally:
        server.stop()


def test_eval_names_a_wrong_model_before_any_match(monkeypatch, capsys):
    from selfplay.core.commands import suites
    from selfplay.core.commands.cli import main

    monkeypatch.setattr(suites, "run_suite", lambda *a: pytest.fail("a match was played"))
    server = Server(Lists("oom").app).start()
    try:
        assert main(["eval", "--suite", "solver", "--model", f"openai:{server.url}#wrong"]) == 2
    finally:
        server.stop()
    assert "lists oom, not 'wrong'" in " ".join(capsys.readouterr().err.split())
