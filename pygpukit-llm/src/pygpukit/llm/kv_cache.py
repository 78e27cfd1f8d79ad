"""KVCache: keys and values of every layer in arrays allocated once for the whole sequence.

Each step writes its new keys and values into the next slots (no concatenation, no
reallocation). Rows of a batch share the slot index; a row whose prompt is shorter is
left-padded, and the host-side `valid` mask and per-row `next_position` keep padding
out of attention and out of the position ids.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pygpukit as gp
from pygpukit import GPUArray

from .config import TransformerConfig

__all__ = ["KVCache"]


class KVCache:
    """Per-layer (batch, kv_heads, max_length, head_dim) key and value arrays."""

    def __init__(
        self,
        cfg: TransformerConfig,
        batch: int,
        max_length: int,
        dtype: Any,
        device: Any = None,
    ) -> None:
        if batch < 1 or max_length < 1:
            raise ValueError(
                f"KVCache: batch and max_length must be >= 1, got {batch}, {max_length}"
            )
        shape = (batch, cfg.num_kv_heads, max_length, cfg.head_dim)
        self.keys: list[GPUArray] = []
        self.values: list[GPUArray] = []
        for _ in range(cfg.num_layers):
            self.keys.append(gp.zeros(shape, dtype=dtype, device=device))
            self.values.append(gp.zeros(shape, dtype=dtype, device=device))
        self.batch, self.max_length = batch, max_length
        self.length = 0  # slots filled so far (the same for every row)
        self.valid = np.zeros((batch, max_length), dtype=bool)  # real tokens, not padding
        self.next_position = np.zeros(batch, dtype=np.int64)  # position id of each row's next token

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.keys) + sum(a.nbytes for a in self.values)

    def reserve(self, new_mask: np.ndarray) -> tuple[int, np.ndarray]:
        """Claim slots for `new_mask.shape[1]` tokens; returns (first slot, position ids)."""
        batch, seq = new_mask.shape
        if batch != self.batch:
            raise ValueError(f"KVCache: the cache holds {self.batch} rows, the input has {batch}")
        start = self.length
        if start + seq > self.max_length:
            raise ValueError(
                f"KVCache: {start} + {seq} tokens exceed the cache's max_length {self.max_length}"
            )
        self.valid[:, start : start + seq] = new_mask
        counts = np.cumsum(new_mask, axis=1)
        positions = self.next_position[:, None] + counts - 1
        positions = np.where(new_mask, positions, np.maximum(positions, 0))
        self.next_position += counts[:, -1]
        self.length = start + seq
        return start, positions

    def rewind(self, length: int) -> None:
        """Forget slots from `length` on (their contents are overwritten by later steps)."""
        if not 0 <= length <= self.length:
            raise ValueError(f"KVCache: cannot rewind to {length}; it holds {self.length} slots")
        dropped = self.valid[:, length : self.length]
        self.next_position -= dropped.sum(axis=1)
        self.valid[:, length:] = False
        self.length = length

    def select_rows(self, rows: Any) -> None:
        """Keep row ``rows[i]`` as row i, for every layer (beam search reorders its beams).

        `rows` holds `batch` row indices; a row may be picked several times (a beam that
        spawned two continuations) and others not at all.
        """
        picked = np.asarray(rows, dtype=np.int64).reshape(-1)
        if picked.shape != (self.batch,) or ((picked < 0) | (picked >= self.batch)).any():
            raise ValueError(
                f"KVCache: select_rows wants {self.batch} row indices in [0, {self.batch}), "
                f"got {picked.tolist()}"
            )
        if (picked == np.arange(self.batch)).all():
            return
        index = gp.from_numpy(picked, self.keys[0].device)
        self.keys = [gp.take(a, index, axis=0) for a in self.keys]
        self.values = [gp.take(a, index, axis=0) for a in self.values]
        self.valid = self.valid[picked].copy()
        self.next_position = self.next_position[picked].copy()
