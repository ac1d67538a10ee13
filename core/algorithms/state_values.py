"""A per-position baseline: the mean return seen from each game position, kept in hashed slots.

A baseline may depend on anything known before the move, and the position is. With one baseline
per role, a move made from a lost position is blamed for the loss as much as the move that lost
it; with one per position, each move is measured against what that position usually leads to,
so the blame falls on the moves that changed the outlook (the missed block, not the opening).

Positions are the prompts the policy saw, hashed into ``buckets`` slots per role (a collision
only shares a baseline, which stays unbiased), so every process reduces a tensor of one fixed
shape under DDP. Each slot keeps a decayed sum and count of returns. A sample's baseline leaves
its own return out, and leans on the role's baseline while the slot has few other visits:

    V(s) = (S[s] - R + k * b_role) / (C[s] - 1 + k)

so a position seen once is measured against its role's baseline, as plain RAE does.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import torch

from selfplay.api.estimator import Reduce, Sample


def _packed(ids: Sequence[int]) -> bytes:
    return b"".join(i.to_bytes(4, "little", signed=True) for i in ids)


def position(sample: Sample) -> bytes:
    """What identifies a position: the role and the prompt's tokens."""
    return sample.role.encode() + b"\0" + _packed(sample.prompt_ids)


def answer_slot(sample: Sample, answer: Sequence[int], buckets: int) -> int:
    """The hashed slot of one answer (token ids) from the sample's position."""
    return zlib.crc32(position(sample) + b"\1" + _packed(answer)) % buckets


class StateValues:
    """Decayed sums and counts of returns per hashed position, per role."""

    def __init__(self, buckets: int, decay: float, prior: float) -> None:
        self.buckets, self.decay, self.prior = buckets, decay, prior
        self.roles: list[str] = []
        self.sums = torch.zeros(0, dtype=torch.float64)
        self.counts = torch.zeros(0, dtype=torch.float64)

    def bind(self, roles: Sequence[str]) -> None:
        """One block of slots per role; a role new to the table gets an empty block."""
        for role in roles:
            if role not in self.roles:
                self.roles.append(role)
                empty = torch.zeros(self.buckets, dtype=torch.float64)
                self.sums = torch.cat([self.sums, empty])
                self.counts = torch.cat([self.counts, empty])

    def slot(self, sample: Sample) -> int:
        self.bind([sample.role])  # a direct call, unbound: learn the roles as they come
        role = self.roles.index(sample.role)
        return role * self.buckets + zlib.crc32(position(sample)) % self.buckets

    def add(self, slots: torch.Tensor, rewards: torch.Tensor, reduce: Reduce) -> torch.Tensor:
        """Decays the table and adds this batch's returns (summed over processes) at
        ``slots``; returns which returns were finite (a non-finite one is left out)."""
        finite = torch.isfinite(rewards)
        own = torch.where(finite, rewards, 0.0)
        batch = torch.zeros(2, self.sums.numel(), dtype=torch.float64)
        batch[0].index_add_(0, slots, own)
        batch[1].index_add_(0, slots, finite.double())
        batch = reduce(batch)
        self.sums = self.decay * self.sums + batch[0]
        self.counts = self.decay * self.counts + batch[1]
        return finite

    def baselines(
        self,
        samples: Sequence[Sample],
        rewards: torch.Tensor,
        fallback: list[float],
        reduce: Reduce,
    ) -> list[float]:
        """Adds this batch to the table, then each sample's leave-one-out baseline."""
        slots = torch.tensor([self.slot(s) for s in samples], dtype=torch.long)
        finite = self.add(slots, rewards, reduce)
        own = torch.where(finite, rewards, 0.0)
        others = self.sums[slots] - own
        count = self.counts[slots] - finite.double()
        prior = self.prior * torch.tensor(fallback, dtype=torch.float64)
        return ((others + prior) / (count + self.prior)).tolist()

    def state_dict(self) -> dict[str, Any]:
        return {"roles": self.roles, "sums": self.sums.tolist(), "counts": self.counts.tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        sums = torch.tensor(state["sums"], dtype=torch.float64)
        if sums.numel() != len(state["roles"]) * self.buckets:
            return  # saved with another bucket count: start the table afresh
        self.roles = list(state["roles"])
        self.sums = torch.nan_to_num(sums)
        self.counts = torch.tensor(state["counts"], dtype=torch.float64)
