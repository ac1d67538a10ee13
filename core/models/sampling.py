"""Sampling a token per row: Gumbel noise from each row's own generator, and top-p filtering.

Each row of a batch samples by the Gumbel-max trick (argmax of log-probabilities plus Gumbel
noise) with noise from its own ``torch.Generator``, so a match samples the same tokens whatever
else shares its batch. Noise for several decoding steps is drawn at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

# Noise for several decoding steps is drawn at once, up to this many values per row.
NOISE_CHUNK_VALUES = 1 << 16


class RowNoise:
    """Gumbel noise per row from the row's own generator, drawn a chunk of steps at a time."""

    def __init__(
        self, seeds: Sequence[int], vocab_size: int, steps: int, device: torch.device
    ) -> None:
        self.generators = [torch.Generator().manual_seed(int(s)) for s in seeds]
        self.vocab_size = vocab_size
        self.device = device
        self.chunk = max(1, min(steps, NOISE_CHUNK_VALUES // vocab_size))
        self.start = -1
        self.block: torch.Tensor | None = None

    def gumbel(self, step: int) -> torch.Tensor:
        if self.block is None or step >= self.start + self.chunk:
            shape = (self.chunk, self.vocab_size)
            uniform = torch.stack([torch.rand(shape, generator=g) for g in self.generators])
            tiny = torch.finfo(uniform.dtype).tiny
            self.block = -torch.log(-torch.log(uniform.clamp_(min=tiny))).to(self.device)
            self.start = step
        return self.block[:, step - self.start]


def top_p_filter(logp: torch.Tensor, top_p: float) -> torch.Tensor:
    """Log-probabilities outside the smallest set with mass >= top_p set to -inf."""
    sorted_logp, order = logp.sort(dim=-1, descending=True)
    mass_before = sorted_logp.exp().cumsum(-1) - sorted_logp.exp()
    drop_sorted = mass_before >= top_p  # the first token is always kept
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logp.masked_fill(drop, float("-inf"))
