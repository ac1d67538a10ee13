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
from selfplay.core.run.build import check_players
from selfplay.core.run.config_loader import build_config
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
