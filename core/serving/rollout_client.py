"""The learner's own turns, generated on rollout servers (``rollout.workers`` / ``servers``).

`ServedLearner` is the policy that holds the learner's seats when the run's rollouts are
served. It encodes each prompt with the trainer's own tokenizer and chat template, draws each
match's sampling seed exactly as the in-process learner does, and asks the servers for token
ids, which come back with their token ids and log-probabilities (`/v1/completions`, vLLM's
fields: core/serving/completions.py). The update scores those ids with the trainer's model,
so nothing of the server's text or tokenizer decides what is trained.

`Workers` spreads a batch over the live servers. `selfplay serve` takes a whole batch in one
request (one seed per prompt) and answers it as the trainer would batch it; any other server
(vLLM) gets one request per prompt, each with its seed, and batches concurrent requests
itself. A server that stops answering is taken out and its prompts go to the others (counted
in ``rollout/worker_failures``, with a warning); the run goes on while one server lives.

Before the first turn every server is checked: it serves the model named (else the names it
does serve), its tokenizer gives the trainer's token ids for a probe text, and it returns
token ids and log-probabilities.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from textwrap import shorten
from typing import Any

from selfplay.api.errors import ConfigError
from selfplay.api.policy import Policy, Request
from selfplay.api.types import Completion
from selfplay.core.models.served.policy import ServedError, ServedPolicy, ServedSpec, Unreachable
from selfplay.core.serving.legal_choice import choose_served

PROBE = "A probe of the tokenizer: [4] 12 + 7 = 19, ünïcödé, tabs\tand\nnew lines."


class RolloutFailure(RuntimeError):
    """No rollout server is left, or one cannot take the new weights (exit code 5)."""


class Worker:
    """One rollout server: its spec, an HTTP client, and whether it is ours (`selfplay serve`)."""

    def __init__(self, spec: str, timeout: float | None = None) -> None:
        self.spec = ServedSpec.parse(spec, "rollout.servers")
        self.client = ServedPolicy(self.spec)
        self.model = self.spec.model or ""
        self.ours = False
        self.vllm = False  # its prompt log-probabilities ignore the temperature
        self.alive = True

    @property
    def url(self) -> str:
        return self.spec.base

    def check(self, tokenizer: Any) -> None:
        """Refuse, before any work, a server that cannot be a learner's (see the module doc)."""
        listed = self.client.request("GET", "models").get("data") or []
        names = [row.get("id") for row in listed]
        self.ours = any(row.get("owned_by") == "selfplay" for row in listed)
        self.vllm = any(row.get("owned_by") == "vllm" for row in listed)
        if self.model not in names:
            raise ConfigError(
                f"rollout server {self.url} does not serve the model {self.model!r}; it serves: "
                f"{', '.join(map(str, names)) or 'nothing'}. Name one of these after '#'."
            )
        mine = tokenizer(PROBE, add_special_tokens=False)["input_ids"]
        body = {"model": self.model, "prompt": PROBE, "add_special_tokens": False}
        theirs = self._root_request("tokenize", body).get("tokens")
        if list(theirs or []) != list(mine):
            raise ConfigError(
                f"rollout server {self.url}: its tokenizer gives other token ids than the "
                f"trainer's for a probe text ({list(theirs or [])[:12]} against {mine[:12]}); "
                "serve the learner's own base model and tokenizer there."
            )

    def complete(self, rows: Sequence[tuple[list[int], int]], sampling: dict[str, Any]) -> list:
        """(token ids, log-probabilities) per row, asked in one request or one per row."""
        sampling = {**sampling, "model": self.model}
        if self.ours:
            body = {**sampling, "prompt": [p for p, _ in rows], "seed": [s for _, s in rows]}
            return self._read(self.client.post("completions", body), len(rows))
        found: list[Any] = []
        for prompt, seed in rows:
            reply = self.client.post("completions", {**sampling, "prompt": prompt, "seed": seed})
            found += self._read(reply, 1)
        return found

    def echo(self, rows: Sequence[tuple[list[int], int]], sampling: dict[str, Any]) -> list:
        """Each row's prompt token log-probabilities (echo, nothing written), the first
        dropped: one request for `selfplay serve`, one per row for any other server."""
        if self.vllm and sampling["temperature"] != 1.0:
            raise ConfigError(
                f"rollout server {self.url} is a vLLM, whose prompt log-probabilities are the "
                "model's own, never divided by the temperature (vLLM 0.32, in any "
                "--logprobs-mode), so the legal choice at generation.temperature="
                f"{sampling['temperature']:g} cannot be scored there; use "
                "generation.temperature=1, or selfplay serve workers (rollout.workers=N)."
            )
        body = {
            "model": self.model,
            "echo": True,
            "max_tokens": 0,
            "logprobs": 0,
            "return_token_ids": True,
            "temperature": sampling["temperature"],
        }
        asked = [[p for p, _ in rows]] if self.ours else [[p] for p, _ in rows]
        found: list[Any] = []
        for prompts in asked:
            reply = self.client.post("completions", {**body, "prompt": prompts})
            read = self._read(reply, len(prompts), echoed=prompts)
            for prompt, (_, logprobs) in zip(prompts, read, strict=True):
                found.append((list(prompt), logprobs[1:]))
        return found

    def _read(
        self, reply: Any, count: int, echoed: Sequence[list[int]] | None = None
    ) -> list[tuple[list[int], list[float]]]:
        """Each choice's new token ids and their log-probabilities; with the ``echoed``
        prompts, the log-probabilities begin with the prompt's (vLLM's echo: ``token_ids`` are
        the new tokens only, none with ``max_tokens: 0``)."""
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not isinstance(choices, list) or len(choices) != count:
            raise ServedError(f"{self.url} answered {str(reply)[:200]} to a completions request.")
        rows = []
        for k, choice in enumerate(choices):
            ids = choice.get("token_ids")
            logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
            if ids is None:
                raise ConfigError(
                    f"rollout server {self.url} returned no token ids: it needs "
                    "return_token_ids (vLLM 0.10.2 or newer takes it per request)."
                )
            if echoed is not None and logprobs is not None:
                # vLLM (0.32) draws one token even for max_tokens 0 and lists it in token_ids
                # with no log-probability and no text: only the tokens scored are read
                ids = ids[: max(0, len(logprobs) - len(echoed[k]))]
            scored = ids if echoed is None else [*echoed[k], *ids]
            if logprobs is None or len(logprobs) != len(scored):
                raise ConfigError(
                    f"rollout server {self.url} returned no log-probabilities for its tokens: "
                    "it must take logprobs=0 (vLLM: --max-logprobs 1 or more, and "
                    "--logprobs-mode processed_logprobs so they include the temperature)"
                    + ("; the legal choice needs echo=true with max_tokens=0." if echoed else ".")
                )
            # an echo's first prompt token has no log-probability (null): 0 stands for it
            rows.append((list(ids), [0.0 if x is None else float(x) for x in logprobs]))
        return rows

    def _root_request(self, endpoint: str, body: dict[str, Any]) -> Any:
        """A route outside /v1 (vLLM's /tokenize, the weight routes)."""
        return ServedPolicy(self.spec.at_root()).post(endpoint, body)


class Workers:
    """The live rollout servers; a batch is split into contiguous shares, one per server."""

    def __init__(self, workers: Sequence[Worker], say: Callable[[str], None]) -> None:
        self.workers, self.say = list(workers), say
        self.failures = 0
        self.lock = threading.Lock()

    @property
    def live(self) -> list[Worker]:
        return [w for w in self.workers if w.alive]

    def generate(
        self, rows: list[tuple[list[int], int]], sampling: dict[str, Any], ask: str = "complete"
    ) -> list:
        """Each row's answer from the live servers (``ask``: a Worker method, ``complete`` or
        ``echo``), a lost server's rows going to the others."""
        found: list[Any] = [None] * len(rows)
        todo = list(range(len(rows)))
        while todo:
            live = self.live
            if not live:
                raise RolloutFailure(
                    "Every rollout server stopped answering ("
                    + ", ".join(w.url for w in self.workers)
                    + "). A resume starts the run's local workers (rollout.workers) anew; "
                    "servers named in rollout.servers must answer again first."
                )
            n = len(todo)
            shares = [todo[k * n // len(live) : (k + 1) * n // len(live)] for k in range(len(live))]
            todo = []
            with ThreadPoolExecutor(len(live), thread_name_prefix="rollout") as pool:
                asked = [
                    (w, share, pool.submit(getattr(w, ask), [rows[i] for i in share], sampling))
                    for w, share in zip(live, shares, strict=True)
                    if share
                ]
                for worker, share, future in asked:
                    try:
                        for i, row in zip(share, future.result(), strict=True):
                            found[i] = row
                    except Unreachable as err:
                        self._lost(worker, err)
                        todo += share
        return found

    def _lost(self, worker: Worker, err: Exception) -> None:
        with self.lock:
            worker.alive = False
            self.failures += 1
        left = len(self.live)
        why = getattr(err, "brief", None) or shorten(str(err), 200, placeholder=" ...")
        self.say(
            f"warning: rollout server {worker.url} stopped answering ({why}); its matches go "
            f"to the {left} other(s)."
            if left
            else f"warning: rollout server {worker.url} stopped answering ({why})."
        )


class ServedLearner(Policy):
    """The learner, generating on rollout servers; ``local`` scores, evaluates and trains."""

    def __init__(self, local: Any, workers: Workers) -> None:
        self.local, self.workers = local, workers
        self.name = local.name
        self.version = 0  # the policy version the servers hold (core/serving/weight_sync.py)
        # prompts are encoded beside the trainer's own use of its tokenizer (search targets,
        # evaluation): a copy of its own, as a tokenizer is not safe to share across threads
        self.encoder = copy.copy(local)
        self.encoder.tokenizer = copy.deepcopy(local.tokenizer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.local, name)  # model, tokenizer, encode, ...: the trainer's own

    def act(self, requests: Sequence[Request], *, greedy: bool = False) -> list[Completion]:
        if not requests:
            return []
        local = self.encoder
        prompts = local.encode(requests)
        seeds = local.row_seeds(requests)
        sampling = {
            "max_tokens": local.max_new_tokens,
            "temperature": 0.0 if greedy else local.temperature,
            "top_p": 1.0 if greedy else local.top_p,
            "logprobs": 0,
            "return_token_ids": True,
        }
        if getattr(local, "choice", "free") == "legal":
            return choose_served(self, requests, prompts, seeds, sampling, greedy)
        return self.write(prompts, seeds, sampling)

    def write(self, prompts: Sequence[list[int]], seeds: Sequence[int], sampling: dict) -> list:
        """Completions written on the servers."""
        rows = self.workers.generate(list(zip(prompts, seeds, strict=True)), sampling)
        texts = self.encoder.tokenizer.batch_decode(
            [ids for ids, _ in rows], skip_special_tokens=True
        )
        return [
            Completion(text=text, token_ids=tuple(ids), logprobs=tuple(lp), prompt_ids=tuple(p))
            for text, (ids, lp), p in zip(texts, rows, prompts, strict=True)
        ]
