"""Rotary position tables: inverse frequencies per rope_scaling type and cos/sin tables.

The tables are small host-side work (head_dim / 2 frequencies); they are computed in
float64 on the host, uploaded once, and sliced per step. Only "dynamic" scaling changes
its frequencies with the sequence length, as transformers does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .config import TransformerConfig

__all__ = ["RopeTables", "inverse_frequencies"]


def _default(dim: int, theta: float) -> np.ndarray:
    return 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)


def _yarn(dim: int, theta: float, sc: dict[str, Any], max_pos: int) -> tuple[np.ndarray, float]:
    factor = float(sc["factor"])
    original = sc.get("original_max_position_embeddings") or max_pos

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention = sc.get("attention_factor")
    if attention is None:
        if sc.get("mscale") and sc.get("mscale_all_dim"):
            attention = mscale(factor, sc["mscale"]) / mscale(factor, sc["mscale_all_dim"])
        else:
            attention = mscale(factor)
    beta_fast, beta_slow = sc.get("beta_fast") or 32, sc.get("beta_slow") or 1

    def correction_dim(rotations: float) -> float:
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if sc.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # avoid a zero-width ramp
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extrapolate = 1 - ramp
    base = theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    inv = (1 / (factor * base)) * (1 - extrapolate) + (1 / base) * extrapolate
    return inv, float(attention)


def _llama3(dim: int, theta: float, sc: dict[str, Any]) -> np.ndarray:
    inv = _default(dim, theta)
    factor = float(sc["factor"])
    low_f, high_f = float(sc["low_freq_factor"]), float(sc["high_freq_factor"])
    old = float(sc["original_max_position_embeddings"])
    wavelen = 2 * math.pi / inv
    scaled = np.where(wavelen > old / low_f, inv / factor, inv)
    smooth = (old / wavelen - low_f) / (high_f - low_f)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old / high_f) & (wavelen <= old / low_f)
    return np.where(medium, smoothed, scaled)


def inverse_frequencies(cfg: TransformerConfig, seq_len: int = 0) -> tuple[np.ndarray, float]:
    """(inverse frequencies, attention factor) for positions below `seq_len`."""
    dim, theta, sc = cfg.head_dim, cfg.rope_theta, cfg.rope_scaling
    kind = "default" if sc is None else sc.get("rope_type", sc.get("type", "default"))
    if kind == "default":
        return _default(dim, theta), 1.0
    if kind == "linear":
        return _default(dim, theta) / float(sc["factor"]), 1.0  # type: ignore[index]
    if kind == "dynamic":
        assert sc is not None
        original = sc.get("original_max_position_embeddings") or cfg.max_position_embeddings
        if seq_len > original:
            factor = float(sc["factor"])
            theta = theta * ((factor * seq_len / original) - (factor - 1)) ** (dim / (dim - 2))
        return _default(dim, theta), 1.0
    if kind == "yarn":
        assert sc is not None
        return _yarn(dim, theta, sc, cfg.max_position_embeddings)
    assert sc is not None and kind == "llama3"
    return _llama3(dim, theta, sc), 1.0


class RopeTables:
    """cos and sin of position * frequency, shape (positions, head_dim // 2), in float32.

    Frequencies are rounded to float32 before the product, as transformers computes them,
    so positions in the thousands give the same angles.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        self.cfg = cfg
        self._dynamic = (cfg.rope_scaling or {}).get("rope_type") == "dynamic"

    def table(self, positions: np.ndarray, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
        """cos, sin for integer `positions` (any shape) when the longest sequence is `seq_len`."""
        inv, attention = inverse_frequencies(self.cfg, seq_len if self._dynamic else 0)
        angles = positions.astype(np.float32)[..., None] * inv.astype(np.float32)
        return (np.cos(angles) * attention).astype(np.float32), (np.sin(angles) * attention).astype(
            np.float32
        )
