"""Requests that arrive together, answered together: the batching behind `selfplay serve`
(core/serving/server.py).

A worker thread takes whatever is waiting (up to ``max_batch`` rows, after at most ``wait``
seconds), groups it by sampling key and makes one call per group, so a client's concurrent
requests share the model's forward passes as in the training loop.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

# (kind, adapter, role, greedy, temperature, top_p, tokens); kind "chat", "completion" or
# "echo" (the prompts' own log-probabilities)
Key = tuple[str, str, str | None, bool, float, float, int]


class Batcher:
    """Collects jobs from the event loop; one worker thread answers them in batches.

    A job is a list of rows with one sampling key; jobs with the same key are merged into one
    call of up to ``max_batch`` rows (a larger job is answered alone, never split).
    ``paused`` holds new batches back (vLLM's /pause) until it is cleared.
    """

    def __init__(
        self,
        answer: Callable[[Key, list[Any]], list[Any]],
        max_batch: int = 32,
        wait: float = 0.005,
    ) -> None:
        self.answer, self.max_batch, self.wait = answer, max_batch, wait
        self.jobs: queue.Queue[tuple[Key, list[Any], Future] | None] = queue.Queue()
        self.batches: list[int] = []  # rows of the policy calls made, for tests and logs
        self.paused = threading.Event()
        self.running = threading.Event()
        self.running.set()
        self.thread = threading.Thread(target=self._work, name="selfplay-serve", daemon=True)
        self.thread.start()

    def submit(self, key: Key, rows: list[Any]) -> Future:
        """A future of the answers to ``rows``, in order."""
        future: Future = Future()
        self.jobs.put((key, rows, future))
        return future

    def close(self) -> None:
        self.jobs.put(None)
        self.running.set()
        self.thread.join(timeout=10)

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            self.running.wait()  # while paused, hold the batch back
            jobs, deadline = [job], time.monotonic() + self.wait
            rows = len(job[1])
            while rows < self.max_batch:
                try:
                    more = self.jobs.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if more is None:
                    self.jobs.put(None)
                    break
                jobs.append(more)
                rows += len(more[1])
            groups: dict[Key, list[tuple[list[Any], Future]]] = {}
            for key, job_rows, future in jobs:
                groups.setdefault(key, []).append((job_rows, future))
            for key, group in groups.items():
                self._answer(key, group)

    def _answer(self, key: Key, group: list[tuple[list[Any], Future]]) -> None:
        rows = [row for job_rows, _ in group for row in job_rows]
        self.batches.append(len(rows))
        try:
            done = self.answer(key, rows)
        except Exception as err:
            for _, future in group:
                future.set_exception(err)
            return
        start = 0
        for job_rows, future in group:
            future.set_result(done[start : start + len(job_rows)])
            start += len(job_rows)
