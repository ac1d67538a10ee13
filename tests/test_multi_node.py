"""Two "machines" under torchrun (gloo, on localhost) train as one process would.

Every process draws the same seatings and seeds and plays its share of them, and each
match samples from its own seeded noise, so the two nodes together play the matches one
process plays; the update takes the token mean over both nodes' samples (and here splits
them into micro-batches), so the weights after every iteration are one process's.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import torch

HELPER = Path(__file__).parent / "helpers" / "run_selfplay.py"
RUN = [
    "run", "--game", "tictactoe", "--matches", "8", "--iterations", "2", "--cold-start", "5",
    "--seed", "11", "--set", "eval.matches=2", "--set", "checkpoint_every=1",
    "--set", "cold_start.batch_size=16", "--set", "train.entropy_coef=0.01",
]  # fmt: skip  # the entropy bonus moves the weights even when every advantage is 0
ENV = {**os.environ, "SELFPLAY_LOAD_PLUGINS": "", "OMP_NUM_THREADS": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def weights(folder: Path, iteration: int) -> dict[str, torch.Tensor]:
    path = folder / "checkpoints" / f"iter-{iteration:06d}" / "state.ckpt"
    return torch.load(path, map_location="cpu")["model"]


# About 2 minutes on 2 cores (three processes start torch); in the fast suite, so CI runs it.
def test_two_nodes_under_torchrun_end_with_the_weights_of_one_process(tmp_path):
    one = subprocess.run(
        [sys.executable, str(HELPER), *RUN, "--out", str(tmp_path), "--name", "one"],
        env=ENV, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr[-2000:]
    port = str(free_port())
    node = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
        "--master-addr", "127.0.0.1", "--master-port", port, str(HELPER), *RUN,
        "--num-nodes", "2", "--strategy", "ddp", "--set", "train.micro_batch_size=3",
        "--out", str(tmp_path), "--name", "two",
    ]  # fmt: skip
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    ranked = [[*node[:3], "--node-rank", str(rank), *node[3:]] for rank in (0, 1)]
    nodes = [subprocess.Popen(command, env=ENV, **pipes) for command in ranked]
    for process in nodes:
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, output[-3000:]
    for iteration in (1, 2):
        alone, together = weights(tmp_path / "one", iteration), weights(tmp_path / "two", iteration)
        for key, weight in alone.items():
            assert torch.allclose(weight, together[key], rtol=0, atol=1e-6), (iteration, key)
    first, last = weights(tmp_path / "one", 1), weights(tmp_path / "one", 2)
    assert any(not torch.equal(last[key], first[key]) for key in first)  # the update moved them
    assert together.keys() == alone.keys()
    assert matches(tmp_path / "two") == matches(tmp_path / "one")


def matches(folder: Path) -> list[str]:
    """The run's matches, turn texts and tokens, without the log-probabilities: those were
    computed in batches of other shapes, so they agree only to rounding."""
    out = []
    for line in (folder / "episodes.jsonl").read_text().splitlines():
        episode = json.loads(line)
        for turn in episode["turns"]:
            turn.pop("logprobs", None)
        out.append(json.dumps(episode, sort_keys=True))
    return sorted(out)
