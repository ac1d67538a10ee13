"""Served models: a seat, judge or pool member played by an OpenAI-compatible server.

    openai:URL#MODEL            e.g. openai:http://localhost:8000/v1#Qwen/Qwen2.5-7B-Instruct

``URL`` is the server's API root (the part before ``/chat/completions``); vLLM, SGLang,
llama.cpp's ``llama-server``, TGI and ``selfplay serve`` all speak this protocol. ``MODEL`` is
the name the server knows the model by, and a name without it is refused before any work: a
server may list several (a base model and its adapters), and playing whichever it lists
first would measure a model nobody named. Only ``pool.server`` names a server alone. Options
ride in the URL's query string (before or after ``#MODEL``) and are not sent
on to the server:

    timeout=60       seconds to wait for one reply before it counts as a failed attempt
    retries=3        further attempts after a failed one (unreachable, timed out, 429, 5xx)
    backoff=0.5      seconds before the first retry; doubled each time, at most 30
    concurrency=8    requests in flight at once (the server batches them)
    lora=PATH        an adapter to load first (vLLM's /v1/load_lora_adapter) under MODEL;
                     PATH is read by the server, on the server's machine
    max_tokens=N     the most tokens a reply may have (default: the run's
                     generation.max_new_tokens; measured by `selfplay eval --suite`: the
                     server's own, e.g. what a `selfplay serve` run generates)

A bearer token, where the server wants one, comes from ``OPENAI_API_KEY``. A served model
generates text only: its tokens' log-probabilities stay on the server, so it can hold any seat
but the learner's and cannot be scored (policy tables, rescoring); asking for its ``model`` or
``tokenizer`` says so. The stdlib's urllib and a thread pool do the requests, so served seats
need nothing beyond the base install.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Policy, Request
from selfplay.api.sampler import SERVED, is_served
from selfplay.api.types import Completion

RETRIED_STATUS = {408, 425, 429, 500, 502, 503, 504}
MAX_BACKOFF = 30.0
OPTIONS = {
    "timeout": float,
    "retries": int,
    "backoff": float,
    "concurrency": int,
    "lora": str,
    "max_tokens": int,
}


class ServedError(ConfigError):
    """A served model could not be reached or refused a request; the message names the URL."""


class Unreachable(ServedError):
    """No answer after every retry (refused, timed out, 5xx): the server is gone, not wrong.
    ``brief`` says why in a few words, for a warning that names the server itself."""

    def __init__(self, message: str, brief: str = "") -> None:
        super().__init__(message)
        self.brief = brief or message


class NotScorable(AttributeError):
    """Raised for a served policy's ``model``/``tokenizer``: it generates text only."""


@dataclass(frozen=True)
class ServedSpec:
    """A parsed ``openai:URL#MODEL?options`` name (see the module doc)."""

    spec: str
    base: str  # the API root, without the selfplay options
    model: str | None
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 0.5
    concurrency: int = 8
    lora: str | None = None
    max_tokens: int | None = None
    api: str | None = None  # the API root given, where ``base`` is the server's own (at_root)

    @classmethod
    def parse(cls, spec: str, what: str = "The served model", server: bool = False) -> ServedSpec:
        """``spec`` read; ``server``: it names a server alone (``pool.server``), no model."""
        if not is_served(spec):
            raise ConfigError(f"{what} {spec!r} is not a served model (openai:URL#MODEL).")
        url = spec[len(SERVED) + 1 :]
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(
                f"{what} {spec!r}: {url!r} is not an http(s) URL; write it as "
                "openai:http://HOST:PORT/v1#MODEL (the server's API root, then its model name)."
            )
        model, _, late = parts.fragment.partition("?")  # options written after #MODEL too
        options: dict[str, Any] = {}
        kept = []
        pairs = parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(late)
        for key, value in pairs:
            if key not in OPTIONS:
                kept.append((key, value))  # the server's own query, passed on
                continue
            try:
                options[key] = OPTIONS[key](value)
            except ValueError:
                raise ConfigError(
                    f"{what} {spec!r}: option {key}={value!r} is not a {OPTIONS[key].__name__}."
                ) from None
        for key in ("retries", "concurrency", "max_tokens"):
            low = 0 if key == "retries" else 1
            if key in options and options[key] < low:
                raise ConfigError(f"{what} {spec!r}: {key} must be at least {low}.")
        for key in ("timeout", "backoff"):
            if key in options and not options[key] >= 0:
                raise ConfigError(f"{what} {spec!r}: {key} must be a number of seconds >= 0.")
        if options.get("lora") is not None and not model:
            raise ConfigError(
                f"{what} {spec!r}: lora= needs the name to load the adapter under: "
                "openai:URL?lora=PATH#NAME."
            )
        path = parts.path.rstrip("/")
        base = urlunsplit((parts.scheme, parts.netloc, path, urlencode(kept), ""))
        if not model and not server:
            named = spec.split("#", 1)[0]
            raise ConfigError(
                f"{what} {spec!r} names no model: write {named}#MODEL, MODEL being a name the "
                f"server lists (curl {urlunsplit((parts.scheme, parts.netloc, path, '', ''))}"
                "/models)."
            )
        return cls(spec=spec, base=base, model=model or None, **options)

    def url(self, endpoint: str, given: bool = False) -> str:
        """The address of ``endpoint`` (``chat/completions``) under the API root; ``given``:
        under the API root the user gave, also where this spec asks the server's root."""
        root, _, query = (self.api or self.base if given else self.base).partition("?")
        return f"{root}/{endpoint}" + (f"?{query}" if query else "")

    def at_root(self) -> ServedSpec:
        """The same server and options at the server's root, where vLLM and `selfplay serve`
        answer ``/tokenize`` and the weight routes; messages still name the API root given."""
        root, _, query = self.base.partition("?")
        base = root.removesuffix("/v1") + (f"?{query}" if query else "")
        return replace(self, base=base, api=self.api or self.base)


class ServedPolicy(Policy):
    """Completes requests by asking a chat-completions server, ``concurrency`` at a time."""

    def __init__(
        self,
        spec: str | ServedSpec,
        *,
        name: str | None = None,
        max_new_tokens: int | None = 64,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: int = 0,
        **_ignored: Any,  # settings of in-memory models (dtype, device, ...) do not apply
    ) -> None:
        self.spec = spec if isinstance(spec, ServedSpec) else ServedSpec.parse(spec)
        self.name = name or self.spec.spec
        if self.spec.max_tokens is not None:
            max_new_tokens = self.spec.max_tokens
        # None: the server's own limit (the request names none)
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        self.seed = seed
        self._model = self.spec.model
        self._ready = threading.Lock()
        self._adapter_loaded = False
        self._jitter = random.Random(seed)

    # ---- what a served model is not ------------------------------------------------------

    @property
    def model(self) -> Any:
        raise NotScorable(self._not_local("has no model weights here"))

    @property
    def tokenizer(self) -> Any:
        raise NotScorable(self._not_local("has no tokenizer here"))

    def _not_local(self, what: str) -> str:
        return (
            f"The served model {self.spec.spec} {what}: a served model generates text only "
            "(its log-probabilities stay on the server), so it cannot be the learner or be "
            "scored. Use a local model folder or a hub id where log-probabilities are needed."
        )

    # ---- acting --------------------------------------------------------------------------

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        if not requests:
            return []
        self._prepare()
        # seeds drawn here, in order, so the run's random streams do not depend on threads
        bodies = [self.body(req, greedy) for req in requests]
        workers = min(self.spec.concurrency, len(bodies))
        if workers == 1:
            return [self._complete(body) for body in bodies]
        with ThreadPoolExecutor(workers, thread_name_prefix="served") as pool:
            return list(pool.map(self._complete, bodies))

    def body(self, req: Request, greedy: bool) -> dict[str, Any]:
        """The chat-completions request for one turn request."""
        messages = [m.as_dict() for m in req.messages]
        body: dict[str, Any] = {
            "model": self._model,
            "messages": messages,
            "temperature": 0.0 if greedy else self.temperature,
            "top_p": 1.0 if greedy else self.top_p,
            # one 64-bit draw, as a model in memory takes: the match's other draws stay the same
            "seed": req.rng.getrandbits(64) % (1 << 31),
        }
        if self.max_new_tokens is not None:
            body["max_tokens"] = self.max_new_tokens
        if messages and messages[-1]["role"] == "assistant":  # a prefill: continue it
            body.update(continue_final_message=True, add_generation_prompt=False)
        return body

    def _complete(self, body: dict[str, Any]) -> Completion:
        reply = self.post("chat/completions", body)
        try:
            text = reply["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise ServedError(
                f"{self.spec.url('chat/completions')} answered without choices[0].message."
                f"content ({str(reply)[:200]}); is it an OpenAI-compatible chat server?"
            ) from None
        return Completion(text=text)

    def check_model(self) -> None:
        """Refuse, before any match, a model the server does not list; a server that lists
        none (no ``/models`` route) is taken at its word."""
        try:
            listed = self.request("GET", "models").get("data") or []
        except Unreachable:
            raise
        except ServedError:
            return
        names = [str(row.get("id")) for row in listed if isinstance(row, dict)]
        if names and self._model not in names:
            raise ServedError(
                f"The served model {self.spec.spec}: {self.spec.url('models', given=True)} "
                f"lists {', '.join(names)}, not {self._model!r}; name one of these after '#'."
            )

    def model_name(self) -> str:
        """The name the server knows the model by."""
        return self._model  # type: ignore[return-value]

    def _prepare(self) -> None:
        """Load the adapter, once."""
        with self._ready:
            if self.spec.lora and not self._adapter_loaded:
                load_adapter(self, self._model, self.spec.lora)
                self._adapter_loaded = True

    # ---- HTTP ----------------------------------------------------------------------------

    def post(self, endpoint: str, body: dict[str, Any]) -> Any:
        return self.request("POST", endpoint, body)

    def request(self, method: str, endpoint: str, body: dict[str, Any] | None = None) -> Any:
        """One call with retries and backoff; JSON back (or the plain text, wrapped)."""
        url = self.spec.url(endpoint)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get("OPENAI_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        attempts = self.spec.retries + 1
        why = ""
        for attempt in range(attempts):
            if attempt:
                delay = min(MAX_BACKOFF, self.spec.backoff * 2 ** (attempt - 1))
                time.sleep(delay * (1 + 0.1 * self._jitter.random()))
            call = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(call, timeout=self.spec.timeout) as response:
                    return _decode(response.read())
            except urllib.error.HTTPError as err:
                message = _error_message(err)
                if err.code not in RETRIED_STATUS:
                    raise ServedError(
                        f"{url} refused the request (HTTP {err.code}: {message})."
                        + _hint(err.code, self.spec)
                    ) from None
                why = f"HTTP {err.code}: {message}"
            except urllib.error.URLError as err:
                why = str(getattr(err, "reason", err))
            except (TimeoutError, OSError) as err:  # a read that timed out, a reset
                why = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        raise Unreachable(
            f"The served model {self.spec.spec}: no answer from {url} after {attempts} "
            f"attempt(s) (last: {why}). Check that the server runs and listens there (curl "
            f"{self.spec.url('models', given=True)}), or give it longer: "
            "?timeout=SECONDS&retries=N.",
            brief=f"no answer after {attempts} attempt(s); last: {why}",
        )


def load_adapter(policy: ServedPolicy, name: str, path: str) -> None:
    """vLLM's dynamic LoRA: load the adapter at ``path`` (on the server) as model ``name``.

    An adapter already loaded under that name is fine (a restarted run loads it again)."""
    try:
        policy.post("load_lora_adapter", {"lora_name": name, "lora_path": path})
    except ServedError as err:
        if "already" not in str(err).lower():
            raise


def unload_adapter(policy: ServedPolicy, name: str) -> None:
    policy.post("unload_lora_adapter", {"lora_name": name})


def served_policy(spec: str, like: Any = None, **options: Any) -> ServedPolicy:
    """A served policy with the generation settings of ``like`` (e.g. the learner)."""
    settings = {
        key: getattr(like, key)
        for key in ("max_new_tokens", "temperature", "top_p", "seed")
        if hasattr(like, key)
    }
    return ServedPolicy(spec, **{**settings, **options})


def _decode(raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"text": text}  # vLLM answers the adapter endpoints in plain text


def _error_message(err: urllib.error.HTTPError) -> str:
    try:
        raw = err.read().decode("utf-8", errors="replace")
    except OSError:
        return err.reason or ""
    try:
        found = json.loads(raw)
        error = found.get("error", found) if isinstance(found, dict) else found
        message = error.get("message") if isinstance(error, dict) else None
        return str(message or error or raw)[:500]
    except (json.JSONDecodeError, AttributeError):
        return raw.strip()[:500] or str(err.reason)


def _hint(code: int, spec: ServedSpec) -> str:
    """The next step after an HTTP error, naming the API root the user gave."""
    given, listed = spec.api or spec.base, spec.url("models", given=True)
    if code == 404 and given.partition("?")[0].endswith("/v1"):
        return f" Is the model {spec.model!r} served there? curl {listed} lists its models."
    if code == 404:
        return (
            f" Is {given} the API root (it usually ends in /v1), and is the model "
            f"{spec.model!r} served there? curl {listed} lists the server's models."
        )
    if code in (401, 403):
        return " The server wants a key: set OPENAI_API_KEY."
    return ""
